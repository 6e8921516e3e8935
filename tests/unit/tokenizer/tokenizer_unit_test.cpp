// The whole encode/decode path on a hand-made vocabulary: special-token partitioning, BOS/EOS,
// byte fallback and pieces, without a model file.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_vocab_builder.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::tokenizer {
namespace {

using testing_support::make_byte_vocab;
using Ids = std::vector<TokenId>;

// 256 hello, 257 Ġworld, 258 <|im_start|>, 259 <|im_end|>, 260 <tool>, 261 <unused>.
VocabData small_vocab() {
    return make_byte_vocab({{"hello"},
                            {"Ġworld"},
                            {"<|im_start|>", TokenType::kControl},
                            {"<|im_end|>", TokenType::kControl},
                            {"<tool>", TokenType::kUserDefined},
                            {"<unused>", TokenType::kUnused}},
                           {"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld", "x y"});
}

std::unique_ptr<Tokenizer> make(const VocabData& d) {
    auto tok = Tokenizer::from_vocab(d);
    EXPECT_TRUE(tok.ok()) << tok.status().to_string();
    return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(TokenizerUnit, EncodesWithMerges) {
    auto tok = make(small_vocab());
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->encode("hello world", false, false), (Ids{256, 257}));
    EXPECT_EQ(tok->decode({256, 257}), "hello world");
    EXPECT_EQ(tok->encode("", true, true), Ids{});
    EXPECT_EQ(tok->vocab_size(), 262);
    EXPECT_EQ(tok->pre_type(), "gpt2");
}

TEST(TokenizerUnit, MergedSymbolWithoutTokenFallsBackToBytes) {
    auto tok = make(small_vocab());
    // "x y" merges to "xy", which is not a token: llama.cpp emits its bytes' tokens.
    EXPECT_EQ(tok->encode("xy", false, false), (Ids{'x', 'y'}));
}

TEST(TokenizerUnit, ControlTokensOnlyWithParseSpecial) {
    auto tok = make(small_vocab());
    EXPECT_EQ(tok->encode("<|im_start|>hello<|im_end|>", false, true), (Ids{258, 256, 259}));
    const Ids plain = tok->encode("<|im_start|>hello<|im_end|>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 258), 0);
    EXPECT_EQ(tok->decode(plain), "<|im_start|>hello<|im_end|>");
}

TEST(TokenizerUnit, UserDefinedTokensAlwaysMatch) {
    auto tok = make(small_vocab());
    EXPECT_EQ(tok->encode("hello<tool>hello", false, false), (Ids{256, 260, 256}));
    EXPECT_EQ(tok->encode("hello<tool>hello", false, true), (Ids{256, 260, 256}));
}

TEST(TokenizerUnit, PiecesOfSpecialTokens) {
    auto tok = make(small_vocab());
    EXPECT_EQ(tok->token_to_piece(258, false), "");
    EXPECT_EQ(tok->token_to_piece(258, true), "<|im_start|>");
    EXPECT_EQ(tok->token_to_piece(260, false), "<tool>");
    EXPECT_EQ(tok->token_to_piece(261, true), "");  // unused tokens render as nothing
    EXPECT_EQ(tok->token_to_piece(' ', false), " ");
    EXPECT_EQ(tok->token_to_piece(0xC3, false), "\xC3");  // half a character
    EXPECT_EQ(tok->token_to_piece(-1, true), "");
    EXPECT_EQ(tok->token_to_piece(100000, true), "");
    EXPECT_EQ(tok->decode({258, 256, 259}, false), "hello");
    EXPECT_EQ(tok->decode({258, 256, 259}, true), "<|im_start|>hello<|im_end|>");
}

TEST(TokenizerUnit, BosAndEosFollowMetadata) {
    VocabData d = small_vocab();
    d.bos_id = 258;
    d.eos_id = 259;
    auto tok = make(d);
    EXPECT_FALSE(tok->add_bos());
    EXPECT_EQ(tok->encode("hello", true, false), (Ids{256}));
    d.add_bos = true;
    d.add_eos = true;
    tok = make(d);
    EXPECT_TRUE(tok->add_bos());
    EXPECT_EQ(tok->bos_id(), 258);
    EXPECT_EQ(tok->eos_id(), 259);
    EXPECT_EQ(tok->encode("hello", true, false), (Ids{258, 256, 259}));
    EXPECT_EQ(tok->encode("", true, false), (Ids{258, 259}));
    EXPECT_EQ(tok->encode("hello", false, false), (Ids{256}));
    EXPECT_TRUE(tok->is_end_of_generation(259));  // "<|im_end|>" and the EOS
    EXPECT_FALSE(tok->is_end_of_generation(256));
}

TEST(TokenizerUnit, Llama3PreTokenizerAddsBosAndIgnoresMerges) {
    VocabData d = small_vocab();
    d.pre = "llama-bpe";
    d.bos_id = 258;
    // "hellx" is a token but no merge chain builds it: ignore_merges takes the whole word.
    d.tokens.push_back("hellx");
    d.token_types.push_back(static_cast<int64_t>(TokenType::kNormal));
    auto tok = make(d);
    EXPECT_TRUE(tok->add_bos());
    EXPECT_EQ(tok->encode("hellx", true, false), (Ids{258, 262}));
}

TEST(TokenizerUnit, RejectsWhatItDoesNotImplement) {
    VocabData d = small_vocab();
    d.model = "t5";
    auto unigram = Tokenizer::from_vocab(d);
    ASSERT_FALSE(unigram.ok());
    EXPECT_EQ(unigram.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(unigram.status().message().find("'t5'"), std::string::npos);

    d = small_vocab();
    d.pre = "brand-new-pre";
    auto pre = Tokenizer::from_vocab(d);
    ASSERT_FALSE(pre.ok());
    EXPECT_EQ(pre.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(pre.status().message().find("brand-new-pre"), std::string::npos);

    d = small_vocab();
    d.merges.clear();
    EXPECT_EQ(Tokenizer::from_vocab(d).status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace lazyattn::tokenizer
