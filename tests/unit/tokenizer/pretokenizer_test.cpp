// Expected splits were checked by hand against the Hugging Face regexes (Python `regex`), which
// llama.cpp's pre-tokenizers reproduce.
#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

namespace lazyattn::tokenizer {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(std::string_view pre_type, std::string_view text) {
    auto pre = PreTokenizer::create(pre_type);
    EXPECT_TRUE(pre.ok()) << pre.status().to_string();
    return pre.ok() ? pre->split(text) : Pieces{};
}

TEST(PreTokenizer, LooksUpTypesAndFlags) {
    auto llama3 = lookup_pre_tokenizer("llama-bpe");
    ASSERT_TRUE(llama3.ok());
    EXPECT_EQ(llama3->kind, PreTokenizerKind::kLlama3);
    EXPECT_TRUE(llama3->ignore_merges);
    EXPECT_TRUE(llama3->add_bos);
    auto smollm = lookup_pre_tokenizer("smollm");
    ASSERT_TRUE(smollm.ok());
    EXPECT_EQ(smollm->kind, PreTokenizerKind::kStarcoder);
    EXPECT_FALSE(smollm->ignore_merges);
    EXPECT_EQ(lookup_pre_tokenizer("")->kind, PreTokenizerKind::kDefault);
    EXPECT_EQ(lookup_pre_tokenizer("qwen2")->kind, PreTokenizerKind::kQwen2);
    EXPECT_EQ(lookup_pre_tokenizer("gpt-2")->kind, PreTokenizerKind::kGpt2);

    auto unknown = lookup_pre_tokenizer("no-such-pre");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(unknown.status().message().find("no-such-pre"), std::string::npos);
}

TEST(PreTokenizer, EveryKindCompiles) {
    for (const auto kind : {PreTokenizerKind::kDefault, PreTokenizerKind::kGpt2, PreTokenizerKind::kLlama3,
                            PreTokenizerKind::kQwen2, PreTokenizerKind::kStarcoder, PreTokenizerKind::kFalcon,
                            PreTokenizerKind::kDeepseekCoder, PreTokenizerKind::kQwen35, PreTokenizerKind::kGemma4}) {
        auto pre = PreTokenizer::create(kind);
        ASSERT_TRUE(pre.ok()) << pre.status().to_string();
        EXPECT_EQ(pre->split("Hello, world 123!\n"), pre->split("Hello, world 123!\n"));
    }
}

TEST(PreTokenizer, RewritesWhitespaceForPcre2) {
    EXPECT_EQ(pcre2_pattern_from_llama("\\s+(?!\\S)"), "[\\t-\\r\\x{85}\\p{Z}]+(?![^\\t-\\r\\x{85}\\p{Z}])");
    EXPECT_EQ(pcre2_pattern_from_llama("[^\\s\\p{Lu}]"), "[^\\t-\\r\\x{85}\\p{Z}\\p{Lu}]");
    // Categories gain what Unicode 15.1 added, inside or outside a class.
    EXPECT_EQ(pcre2_pattern_from_llama("\\p{N}+").rfind("[\\p{N}\\x{11F50}-", 0), 0u);
    EXPECT_NE(pcre2_pattern_from_llama("[^\\p{L}]").find("\\x{31350}-\\x{323AF}]"), std::string::npos);
    EXPECT_NE(pcre2_pattern_from_llama("\\p{M}").find("\\x{1E4EC}-\\x{1E4EF}]"), std::string::npos);
    EXPECT_EQ(pcre2_pattern_from_llama("\\s+$"), "[\\t-\\r\\x{85}\\p{Z}]+\\z");
    EXPECT_EQ(pcre2_pattern_from_llama("[$]\\$"), "[$]\\$");
}

TEST(PreTokenizer, Gpt2) {
    EXPECT_EQ(split("gpt2", "Hello world"), (Pieces{"Hello", " world"}));
    EXPECT_EQ(split("gpt2", "I'm here, they'll go!"), (Pieces{"I", "'m", " here", ",", " they", "'ll", " go", "!"}));
    EXPECT_EQ(split("gpt2", "abc 12345 x"), (Pieces{"abc", " 12345", " x"}));
    EXPECT_EQ(split("gpt2", "  \n\n a"), (Pieces{"  \n\n", " a"}));
    EXPECT_EQ(split("gpt2", "x = 1234567;\n\treturn"), (Pieces{"x", " =", " 1234567", ";", "\n", "\t", "return"}));
    EXPECT_EQ(split("gpt2", "Don'T WE'LL"), (Pieces{"Don", "'", "T", " WE", "'", "LL"}));
    EXPECT_EQ(split("gpt2", "foo   bar  \n"), (Pieces{"foo", "  ", " bar", "  \n"}));
    // U+00A0 and U+0085 are whitespace for llama.cpp (PCRE2's own \s lacks U+0085).
    EXPECT_EQ(split("gpt2", "a\u00a0b\u0085c"), (Pieces{"a", "\u00a0", "b", "\u0085", "c"}));
}

TEST(PreTokenizer, SmolLMSplitsEveryDigit) {
    EXPECT_EQ(split("smollm", "abc 12345 x"), (Pieces{"abc", " ", "1", "2", "3", "4", "5", " x"}));
    EXPECT_EQ(split("smollm", "x = 1234567;"), (Pieces{"x", " =", " ", "1", "2", "3", "4", "5", "6", "7", ";"}));
    EXPECT_EQ(split("smollm", "$1,234.56!!"), (Pieces{"$", "1", ",", "2", "3", "4", ".", "5", "6", "!!"}));
    // \p{N} is every number, not only ASCII digits: Arabic-Indic digits and circled numbers too.
    EXPECT_EQ(split("smollm", "a\u0661\u0662 \u2460\u2461"),
              (Pieces{"a", "\u0661", "\u0662", " ", "\u2460", "\u2461"}));
    EXPECT_EQ(split("starcoder", "v2"), (Pieces{"v", "2"}));
}

TEST(PreTokenizer, Llama3) {
    EXPECT_EQ(split("llama3", "abc 12345 x"), (Pieces{"abc", " ", "123", "45", " x"}));
    EXPECT_EQ(split("llama3", "x = 1234567;\n\treturn"),
              (Pieces{"x", " =", " ", "123", "456", "7", ";\n", "\treturn"}));
    EXPECT_EQ(split("llama3", "Don'T WE'LL"), (Pieces{"Don", "'T", " WE", "'LL"}));
    EXPECT_EQ(split("llama3", "a\u00a0b\u0085c"), (Pieces{"a", "\u00a0b", "\u0085c"}));
    EXPECT_EQ(split("llama3", "  \n\n a"), (Pieces{"  \n\n", " a"}));
}

TEST(PreTokenizer, Qwen2) {
    EXPECT_EQ(split("qwen2", "abc 12345 x"), (Pieces{"abc", " ", "1", "2", "3", "4", "5", " x"}));
    EXPECT_EQ(split("qwen2", "x = 12;\n\treturn"), (Pieces{"x", " =", " ", "1", "2", ";\n", "\treturn"}));
}

TEST(PreTokenizer, Qwen35KeepsCombiningMarksInWords) {
    // "e" + U+0301 (combining acute): qwen2 cuts the mark off as punctuation-like, qwen35 keeps it.
    EXPECT_EQ(split("qwen2", "cafe\u0301 ok"), (Pieces{"cafe", "\u0301", " ok"}));
    EXPECT_EQ(split("qwen35", "cafe\u0301 ok"), (Pieces{"cafe\u0301", " ok"}));
    EXPECT_EQ(split("qwen35", "x = 12;"), (Pieces{"x", " =", " ", "1", "2", ";"}));
    // U+0CF3 became a mark in Unicode 15.0; llama.cpp's tables know it.
    EXPECT_EQ(split("qwen35", "\u0C95\u0CF3"), (Pieces{"\u0C95\u0CF3"}));
    auto info = lookup_pre_tokenizer("qwen35");
    ASSERT_TRUE(info.ok());
    EXPECT_FALSE(info->add_bos);
    EXPECT_FALSE(info->spm_style);
}

TEST(PreTokenizer, Gemma4SplitsOnlyNewlineRuns) {
    EXPECT_EQ(split("gemma4", "a b, c!\n\nd\n"), (Pieces{"a b, c!", "\n\n", "d", "\n"}));
    auto info = lookup_pre_tokenizer("gemma4");
    ASSERT_TRUE(info.ok());
    EXPECT_TRUE(info->spm_style);
    EXPECT_TRUE(info->add_bos);
}

TEST(PreTokenizer, DefaultSplitsPunctuationFirst) {
    EXPECT_EQ(split("default", "I'm here, they'll go!"),
              (Pieces{"I", "'", "m", " here", ",", " they", "'", "ll", " go", "!"}));
    EXPECT_EQ(split("default", "x = 1234567;"), (Pieces{"x", " ", "=", " ", "123", "456", "7", ";"}));
}

TEST(PreTokenizer, CjkAndEmoji) {
    EXPECT_EQ(split("smollm", "日本語 テキスト"), (Pieces{"日本語", " テキスト"}));
    EXPECT_EQ(split("smollm", "hi 👋🏽!"), (Pieces{"hi", " 👋🏽!"}));
}

TEST(PreTokenizer, UsesUnicode15Categories) {
    // U+31350 (CJK Extension H) became a letter in Unicode 15.0, U+1D2C0 (Kaktovik numeral) a
    // number; llama.cpp's tables know both.
    EXPECT_EQ(split("llama3", "\U00031350's"), (Pieces{"\U00031350", "'s"}));
    EXPECT_EQ(split("smollm", "a\U0001D2C0\U0001D2C1"), (Pieces{"a", "\U0001D2C0", "\U0001D2C1"}));
}

TEST(PreTokenizer, MalformedInputBecomesReplacementCharacters) {
    // llama.cpp decodes "\xff" as U+FFFD and tokenizes that; so do we.
    EXPECT_EQ(split("smollm",
                    "a\xff"
                    "b"),
              (Pieces{"a", "\uFFFD", "b"}));
    EXPECT_EQ(split("smollm", "\xE2\x82"), (Pieces{"\uFFFD\uFFFD"}));
}

TEST(PreTokenizer, EmptyAndLongInputs) {
    EXPECT_TRUE(split("smollm", "").empty());
    const std::string spaces(200000, ' ');
    EXPECT_EQ(split("smollm", spaces + "x"), (Pieces{std::string(199999, ' '), " x"}));
    const std::string letters(200000, 'a');
    EXPECT_EQ(split("llama3", letters), (Pieces{letters}));
}

}  // namespace
}  // namespace lazyattn::tokenizer
