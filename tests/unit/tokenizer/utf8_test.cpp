#include "core/utf8.h"

#include <gtest/gtest.h>

namespace lazyattn::text {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, EncodesEveryLength) {
    EXPECT_EQ(encode_utf8(U'A'), "A");
    EXPECT_EQ(encode_utf8(0xE9), "\xC3\xA9");
    EXPECT_EQ(encode_utf8(0x20AC), "\xE2\x82\xAC");
    EXPECT_EQ(encode_utf8(0x1F600), "\xF0\x9F\x98\x80");
    EXPECT_EQ(encode_utf8(0x110000), kFffd);
    EXPECT_EQ(encode_utf8(0xD800), "\xED\xA0\x80");  // llama.cpp writes surrogates as-is
}

TEST(Utf8, StrictDecodeAcceptsValidSequences) {
    const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
    const char32_t expected[] = {U'a', 0xE9, 0x20AC, 0x1F600};
    size_t pos = 0;
    for (const char32_t cp : expected) {
        const Utf8Decoded d = decode_utf8_one(s, pos);
        ASSERT_EQ(d.status, Utf8Status::kOk);
        EXPECT_EQ(d.code_point, cp);
        pos += d.length;
    }
    EXPECT_EQ(pos, s.size());
    EXPECT_TRUE(is_valid_utf8(s));
    EXPECT_TRUE(is_valid_utf8(""));
}

TEST(Utf8, StrictDecodeRejectsMalformedSequences) {
    for (const std::string bad : {"\x80", "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80", "\xF0\x80\x80\x80",
                                  "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF"}) {
        EXPECT_FALSE(is_valid_utf8(bad)) << testing::PrintToString(bad);
        EXPECT_EQ(decode_utf8_one(bad, 0).status, Utf8Status::kInvalid);
    }
    // Maximal subpart: E2 82 followed by 'x' is one invalid unit of two bytes.
    const Utf8Decoded d = decode_utf8_one("\xE2\x82x", 0);
    EXPECT_EQ(d.status, Utf8Status::kInvalid);
    EXPECT_EQ(d.length, 2u);
}

TEST(Utf8, DetectsIncompleteTail) {
    EXPECT_EQ(utf8_incomplete_tail(""), 0u);
    EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
    EXPECT_EQ(utf8_incomplete_tail("a\xC3"), 1u);
    EXPECT_EQ(utf8_incomplete_tail("a\xE2\x82"), 2u);
    EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98"), 3u);
    EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98\x80"), 0u);
    EXPECT_EQ(utf8_incomplete_tail("a\x80"), 0u);     // stray continuation: invalid, not held
    EXPECT_EQ(utf8_incomplete_tail("\xE0\x80"), 0u);  // can never be completed (overlong)
    EXPECT_EQ(utf8_incomplete_tail("\xED\xA0"), 0u);  // would be a surrogate
    EXPECT_EQ(utf8_incomplete_tail("\xC3\xA9\xF0"), 1u);
}

TEST(Utf8, SanitizeReplacesEachMaximalSubpart) {
    EXPECT_EQ(sanitize_utf8("ok \xC3\xA9"), "ok \xC3\xA9");
    EXPECT_EQ(sanitize_utf8("a\x80"
                            "b"),
              "a" + kFffd + "b");
    EXPECT_EQ(sanitize_utf8("\xE2\x82x"), kFffd + "x");
    EXPECT_EQ(sanitize_utf8("\xF0\x9F\x98"), kFffd);
    EXPECT_EQ(sanitize_utf8("\xC0\x80"), kFffd + kFffd);
}

TEST(Utf8, LenientDecodeMatchesLlamaCpp) {
    // Valid text decodes normally.
    EXPECT_EQ(decode_utf8_lenient("a\xC3\xA9"), (std::vector<char32_t>{U'a', 0xE9}));
    // Overlong forms and surrogates are accepted as llama.cpp accepts them.
    EXPECT_EQ(decode_utf8_lenient("\xC0\x80"), (std::vector<char32_t>{0}));
    EXPECT_EQ(decode_utf8_lenient("\xED\xA0\x80"), (std::vector<char32_t>{0xD800}));
    // Each undecodable byte is one U+FFFD and decoding resumes at the next byte.
    EXPECT_EQ(decode_utf8_lenient("\x80"
                                  "a"),
              (std::vector<char32_t>{0xFFFD, U'a'}));
    EXPECT_EQ(decode_utf8_lenient("\xE2\x82"), (std::vector<char32_t>{0xFFFD, 0xFFFD}));
    EXPECT_EQ(decode_utf8_lenient("\xFF"), (std::vector<char32_t>{0xFFFD}));
}

TEST(Utf8, LeadLengthTable) {
    EXPECT_EQ(utf8_lead_length('a'), 1u);
    EXPECT_EQ(utf8_lead_length(0x80), 1u);
    EXPECT_EQ(utf8_lead_length(0xC3), 2u);
    EXPECT_EQ(utf8_lead_length(0xE2), 3u);
    EXPECT_EQ(utf8_lead_length(0xF0), 4u);
}

}  // namespace
}  // namespace lazyattn::text
