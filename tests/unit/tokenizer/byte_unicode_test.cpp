#include "core/byte_unicode.h"

#include <gtest/gtest.h>

#include <set>

#include "core/utf8.h"

namespace lazyattn::text {
namespace {

TEST(ByteUnicode, KnownMappings) {
    EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // 'Ġ' U+0120
    EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // 'Ċ' U+010A
    EXPECT_EQ(byte_to_unicode('\t'), "\xC4\x89");  // 'ĉ' U+0109
    EXPECT_EQ(byte_to_unicode(0), "\xC4\x80");     // 'Ā' U+0100
    EXPECT_EQ(byte_to_unicode('a'), "a");
    EXPECT_EQ(byte_to_unicode(0xE9), "\xC3\xA9");  // printable Latin-1 maps to itself
    EXPECT_EQ(byte_to_unicode(0xAD), "\xC5\x83");  // soft hyphen is remapped (U+0143)
    EXPECT_EQ(bytes_to_unicode("a b"),
              "a\xC4\xA0"
              "b");
}

TEST(ByteUnicode, IsABijection) {
    std::set<std::string> seen;
    for (int b = 0; b < 256; ++b) {
        const std::string& text = byte_to_unicode(static_cast<uint8_t>(b));
        EXPECT_TRUE(seen.insert(text).second);
        const std::vector<char32_t> cps = decode_utf8_lenient(text);
        ASSERT_EQ(cps.size(), 1u);
        EXPECT_EQ(unicode_to_byte(cps[0]), b);
    }
    EXPECT_EQ(unicode_to_byte(0x20), -1);   // ' ' itself is not a mapped code point
    EXPECT_EQ(unicode_to_byte(0x144), -1);  // one past the last remapped code point
    EXPECT_EQ(unicode_to_byte(0x4E00), -1);
}

}  // namespace
}  // namespace lazyattn::text
