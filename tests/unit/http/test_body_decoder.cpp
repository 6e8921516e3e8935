// decode_content: gzip and deflate decoded within a bound; everything else refused.
#include <gtest/gtest.h>

#include <random>

#include "compress_util.h"
#include "http/body_decoder.h"

namespace lazyattn::http {
namespace {

using testing::compress_with;

TEST(BodyDecoder, RoundTripsRandomBodies) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 20; ++trial) {
        std::string text(rng() % 200000, '\0');
        for (char& c : text) c = char('a' + rng() % 4);
        for (auto [name, bits] : {std::pair{"gzip", 31}, std::pair{"deflate", 15}, std::pair{"X-GZIP", 31}}) {
            std::string body = compress_with(text, bits);
            ASSERT_EQ(decode_content(name, body, int64_t(text.size())), DecodeResult::kOk) << name;
            EXPECT_EQ(body, text);
            std::string again = compress_with(text, bits);
            if (!text.empty()) {
                EXPECT_EQ(decode_content(name, again, int64_t(text.size()) - 1), DecodeResult::kTooLarge);
            }
        }
    }
}

TEST(BodyDecoder, IdentityIsBoundedAndUnknownCodingsRefused) {
    std::string body = "abc";
    EXPECT_EQ(decode_content("", body, 3), DecodeResult::kOk);
    EXPECT_EQ(decode_content("identity", body, 2), DecodeResult::kTooLarge);
    EXPECT_EQ(decode_content("br", body, 100), DecodeResult::kUnsupported);
    EXPECT_EQ(decode_content("gzip, gzip", body, 100), DecodeResult::kUnsupported);
    std::string garbage = "not gzip at all";
    EXPECT_EQ(decode_content("gzip", garbage, 100), DecodeResult::kCorrupt);
    std::string truncated = compress_with(std::string(5000, 'x'), 31);
    truncated.resize(truncated.size() / 2);
    EXPECT_EQ(decode_content("gzip", truncated, 100000), DecodeResult::kCorrupt);
}

}  // namespace
}  // namespace lazyattn::http
