// SentencePiece tokenizer (model "llama") on hand-made vocabularies: merging by score, byte
// fallback, the unknown token, the space prefix, special tokens, pieces, malformed and very long
// input, and vocabularies that must be refused at load. (llama.cpp's own vectors for real
// vocabularies are in llama_vectors_test.cpp.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "loader/gguf_file.h"
#include "loader/gguf_writer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace lazyattn::tokenizer {
namespace {

using Ids = std::vector<TokenId>;
const std::string kSp = "\xE2\x96\x81";  // U+2581

struct Piece {
    std::string text;
    float score = 0.0f;
    TokenType type = TokenType::kNormal;
};

// 0 <unk>, 1 <s>, 2 </s>, then (with_bytes) 3..258 <0x00>..<0xFF>, then `pieces` in order.
VocabData make_spm_vocab(const std::vector<Piece>& pieces, bool with_bytes = true) {
    VocabData d;
    d.model = "llama";
    auto add = [&](const std::string& text, float score, TokenType type) {
        d.tokens.push_back(text);
        d.scores.push_back(score);
        d.token_types.push_back(static_cast<int64_t>(type));
    };
    add("<unk>", 0, TokenType::kUnknown);
    add("<s>", 0, TokenType::kControl);
    add("</s>", 0, TokenType::kControl);
    if (with_bytes) {
        for (int b = 0; b < 256; ++b) {
            char hex[7];
            std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
            add(hex, 0, TokenType::kByte);
        }
    }
    for (const Piece& p : pieces) add(p.text, p.score, p.type);
    return d;
}

constexpr TokenId kFirst = 259;  // first piece id when the byte tokens are present

// 259 ▁, 260 h, 261 e, 262 l, 263 o, 264 he, 265 ll, 266 hell, 267 hello, 268 ▁hello, 269 w, 270 ▁w,
// 271 a, 272 b, 273 c, 274 ab, 275 bc, 276 <|im_start|> (control), 277 <tool> (user-defined),
// 278 aa, 279 aaaa, 280 ▁▁.
std::vector<Piece> basic_pieces() {
    return {{kSp, -1},
            {"h", -2},
            {"e", -2},
            {"l", -2},
            {"o", -2},
            {"he", -3},
            {"ll", -3},
            {"hell", -4},
            {"hello", -5},
            {kSp + "hello", -6},
            {"w", -2},
            {kSp + "w", -3},
            {"a", -2},
            {"b", -2},
            {"c", -2},
            {"ab", -5},
            {"bc", -4},
            {"<|im_start|>", 0, TokenType::kControl},
            {"<tool>", 0, TokenType::kUserDefined},
            {"aa", -3},
            {"aaaa", -4},
            {kSp + kSp, -3}};
}

std::unique_ptr<Tokenizer> make(const VocabData& d) {
    auto tok = Tokenizer::from_vocab(d);
    EXPECT_TRUE(tok.ok()) << tok.status().to_string();
    return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(SpmTokenizer, MergesTheHighestScoringPairFirst) {
    auto tok = make(make_spm_vocab(basic_pieces()));
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->model_type(), "llama");
    // ▁ h e l l o -> he, ll (equal scores, leftmost first) -> hell -> hello -> ▁hello.
    EXPECT_EQ(tok->encode("hello", false, false), (Ids{kFirst + 9}));
    // "bc" (-4) beats "ab" (-5), and "abc" is no token: ▁ a bc.
    EXPECT_EQ(tok->encode("abc", false, false), (Ids{kFirst, kFirst + 12, kFirst + 16}));
    EXPECT_EQ(tok->encode("hello w", false, false), (Ids{kFirst + 9, kFirst + 11}));
}

TEST(SpmTokenizer, EqualScoresMergeLeftmostFirst) {
    std::vector<Piece> pieces = basic_pieces();
    pieces[15].score = -4;  // "ab" now ties with "bc"
    auto tok = make(make_spm_vocab(pieces));
    EXPECT_EQ(tok->encode("abc", false, false), (Ids{kFirst, kFirst + 15, kFirst + 14}));
}

TEST(SpmTokenizer, SpacePrefixFollowsMetadataAndSpecialTokens) {
    VocabData d = make_spm_vocab(basic_pieces());
    auto tok = make(d);
    // Every fragment at the start or after a special token gets the leading space.
    EXPECT_EQ(tok->encode("<|im_start|>hello", false, true), (Ids{kFirst + 17, kFirst + 9}));
    EXPECT_EQ(tok->encode("hello<tool>hello", false, false), (Ids{kFirst + 9, kFirst + 18, kFirst + 9}));
    // Spaces are U+2581: "  hello" is ▁▁ then hello... merged as ▁▁ + hello.
    EXPECT_EQ(tok->encode(" hello", false, false), (Ids{kFirst + 21, kFirst + 8}));
    d.add_space_prefix = false;
    tok = make(d);
    EXPECT_EQ(tok->encode("hello", false, false), (Ids{kFirst + 8}));
    EXPECT_EQ(tok->encode(" hello", false, false), (Ids{kFirst + 9}));
}

TEST(SpmTokenizer, ControlTokensNeedParseSpecial) {
    auto tok = make(make_spm_vocab(basic_pieces()));
    const Ids plain = tok->encode("<|im_start|>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), kFirst + 17), 0);
    EXPECT_EQ(tok->decode(plain), " <|im_start|>");
}

TEST(SpmTokenizer, BosAndEosFromMetadata) {
    VocabData d = make_spm_vocab(basic_pieces());
    auto tok = make(d);
    EXPECT_TRUE(tok->add_bos());  // SentencePiece's default
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->encode("hello", true, false), (Ids{1, kFirst + 9}));
    EXPECT_EQ(tok->encode("", true, false), (Ids{1}));
    EXPECT_TRUE(tok->is_end_of_generation(2));
    d.add_bos = false;
    d.add_eos = true;
    tok = make(d);
    EXPECT_EQ(tok->encode("hello", true, false), (Ids{kFirst + 9, 2}));
}

TEST(SpmTokenizer, EmptyInput) {
    auto tok = make(make_spm_vocab(basic_pieces()));
    EXPECT_EQ(tok->encode("", false, false), Ids{});
    EXPECT_EQ(tok->encode("", false, true), Ids{});
}

TEST(SpmTokenizer, ByteFallbackForCharactersWithoutToken) {
    auto tok = make(make_spm_vocab(basic_pieces()));
    // "é" is no token: its two bytes' tokens (3 + byte value).
    EXPECT_EQ(tok->encode("\xC3\xA9", false, false), (Ids{kFirst, 3 + 0xC3, 3 + 0xA9}));
    EXPECT_EQ(tok->decode(tok->encode("h\xC3\xA9llo", false, false)), " h\xC3\xA9llo");
}

TEST(SpmTokenizer, InvalidUtf8FallsBackToItsBytes) {
    auto tok = make(make_spm_vocab(basic_pieces()));
    // 0xFF announces a four-byte sequence: the symbol is the 0xFF byte and what follows.
    const std::string text = "a\xFF\xC3";
    EXPECT_EQ(tok->encode(text, false, false), (Ids{kFirst, kFirst + 12, 3 + 0xFF, 3 + 0xC3}));
    EXPECT_EQ(tok->decode(tok->encode(text, false, false)), " " + text);
    EXPECT_EQ(tok->encode("\x80", false, false), (Ids{kFirst, 3 + 0x80}));
}

TEST(SpmTokenizer, UnknownTokenWithoutByteTokens) {
    auto tok = make(make_spm_vocab({{kSp, -1}, {"h", -2}, {"i", -2}, {"hi", -3}}, /*with_bytes=*/false));
    ASSERT_NE(tok, nullptr);
    // One unknown token per character that has no token.
    EXPECT_EQ(tok->encode("h\xC3\xA9i", false, false), (Ids{3, 4, 0, 5}));
    EXPECT_EQ(tok->token_to_piece(0, false), "");
    EXPECT_EQ(tok->token_to_piece(0, true), "<unk>");
}

TEST(SpmTokenizer, Pieces) {
    auto tok = make(make_spm_vocab(basic_pieces()));
    EXPECT_EQ(tok->token_to_piece(kFirst + 9, false), " hello");
    EXPECT_EQ(tok->token_to_piece(3 + 'A', false), "A");
    EXPECT_EQ(tok->token_to_piece(3 + 0xC3, false), "\xC3");  // half a character
    EXPECT_EQ(tok->token_to_piece(1, false), "");             // control hidden
    EXPECT_EQ(tok->token_to_piece(1, true), "<s>");
    EXPECT_EQ(tok->token_to_piece(kFirst + 18, false), "<tool>");  // user-defined shown
    EXPECT_EQ(tok->token_to_piece(-1, true), "");
    EXPECT_EQ(tok->token_to_piece(1 << 20, true), "");
    EXPECT_EQ(tok->decode({1, kFirst + 9, kFirst + 11}), " hello w");
}

TEST(SpmTokenizer, MegabyteOfOneCharacterIsNotQuadratic) {
    auto tok = make(make_spm_vocab(basic_pieces()));
    for (const char c : {'a', ' ', 'z'}) {  // merged runs, space runs, byte fallback
        const std::string text(1 << 20, c);
        const auto start = std::chrono::steady_clock::now();
        const Ids ids = tok->encode(text, false, false);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_EQ(tok->decode(ids), " " + text);
        EXPECT_LT(seconds, 30.0) << "1 MiB of '" << c << "'";  // quadratic would take hours
        if (c == 'a') {
            EXPECT_EQ(ids.size(), 1u + (1 << 18));  // ▁ then aaaa...
        }
    }
}

TEST(SpmTokenizer, RefusesHostileVocabularies) {
    VocabData d = make_spm_vocab(basic_pieces());
    d.scores.resize(10);
    EXPECT_EQ(Tokenizer::from_vocab(d).status().code(), StatusCode::kCorrupt);

    d = make_spm_vocab(basic_pieces());
    d.token_types.pop_back();
    EXPECT_EQ(Tokenizer::from_vocab(d).status().code(), StatusCode::kCorrupt);

    d = make_spm_vocab(basic_pieces());
    d.tokens[kFirst + 1] = "e";  // duplicate text
    EXPECT_EQ(Tokenizer::from_vocab(d).status().code(), StatusCode::kCorrupt);

    d = make_spm_vocab(basic_pieces());
    d.tokens[3] = "<0xZZ>";  // a byte token that names no byte
    auto bad_byte = Tokenizer::from_vocab(d);
    ASSERT_FALSE(bad_byte.ok());
    EXPECT_EQ(bad_byte.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(bad_byte.status().message().find("<0xZZ>"), std::string::npos);

    d = make_spm_vocab({}, /*with_bytes=*/false);
    d.tokens.resize(1);  // just <unk>: the default BOS (1) is out of range, yet add_bos defaults on
    d.scores.resize(1);
    d.token_types.resize(1);
    auto no_bos = Tokenizer::from_vocab(d);
    ASSERT_FALSE(no_bos.ok());
    EXPECT_EQ(no_bos.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(no_bos.status().message().find("BOS"), std::string::npos);
    d.add_bos = false;
    EXPECT_TRUE(Tokenizer::from_vocab(d).ok());
}

// A vocabulary-only GGUF (no tensors) as llama.cpp's ggml-vocab-*.gguf files are; `corrupt`
// writes the scores with the wrong element type.
Expected<std::unique_ptr<Tokenizer>> load_written_vocab(const VocabData& d, bool corrupt_scores) {
    loader::GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_string("tokenizer.ggml.model", d.model);
    w.add_string_array("tokenizer.ggml.tokens", d.tokens);
    if (corrupt_scores) {
        w.add_string_array("tokenizer.ggml.scores", d.tokens);
    } else {
        w.add_f32_array("tokenizer.ggml.scores", std::vector<float>(d.scores.begin(), d.scores.end()));
    }
    w.add_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(d.token_types.begin(), d.token_types.end()));
    w.add_bool("tokenizer.ggml.add_space_prefix", false);
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lazyattn_spm_vocab_" + std::to_string(::getpid()) + ".gguf"))
            .string();
    LA_RETURN_IF_ERROR(w.write(path));
    auto file = loader::GgufFile::open(path);
    std::filesystem::remove(path);
    if (!file.ok()) return file.status();
    return Tokenizer::from_gguf(**file);
}

TEST(SpmTokenizer, LoadsFromAVocabularyOnlyGguf) {
    auto tok = load_written_vocab(make_spm_vocab(basic_pieces()), false);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    EXPECT_EQ((*tok)->encode("hello", false, false), (Ids{kFirst + 8}));  // add_space_prefix = false read
    auto bad = load_written_vocab(make_spm_vocab(basic_pieces()), true);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("tokenizer.ggml.scores"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace lazyattn::tokenizer
