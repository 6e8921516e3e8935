// The span rule (kernels/params/attention_params.h) against its definition, key by key: a query
// at logical position p sees the span's token t iff logical_start + t <= p and, under a window
// W > 0, p - (logical_start + t) < W; the query is rotated to p - (logical_start - stored_base)
// when keys are stored rotated, to p when they are raw.
#include <gtest/gtest.h>

#include "kernels/params/attention_params.h"

namespace lazyattn::kernels {
namespace {

TEST(SpanRule, VisibleRangeIsExactlyTheVisibleKeys) {
    for (int32_t num_tokens : {0, 1, 5, 16, 33}) {
        for (int32_t start : {0, 3, 40}) {
            for (int32_t window : {0, 1, 4, 17}) {
                const AttentionSpan span{0, num_tokens, start, 0};
                for (int32_t pos = 0; pos < 90; ++pos) {
                    int32_t first = -1, end = -1;
                    span_visible_range(span, pos, window, &first, &end);
                    ASSERT_LE(0, first);
                    ASSERT_LE(first, end);
                    ASSERT_LE(end, num_tokens);
                    EXPECT_EQ(end, span_causal_end(span, pos));
                    for (int32_t t = 0; t < num_tokens; ++t) {
                        const int32_t k = start + t;
                        const bool by_definition = k <= pos && (window == 0 || pos - k < window);
                        EXPECT_EQ(by_definition, t >= first && t < end)
                            << "tokens " << num_tokens << " start " << start << " window " << window << " pos " << pos
                            << " t " << t;
                        EXPECT_EQ(by_definition, key_visible(pos, span.key_position(t), window));
                    }
                }
            }
        }
    }
}

TEST(SpanRule, FarPositionsDoNotOverflow) {
    const AttentionSpan span{0, 16, 2'000'000'000, 0};
    int32_t first, end;
    span_visible_range(span, -2'000'000'000, 8, &first, &end);
    EXPECT_EQ(end, 0);
    EXPECT_EQ(first, 0);
    EXPECT_FALSE(in_window(2'000'000'000, -2'000'000'000, 8));
}

TEST(SpanRule, DeltaAndQueryRotation) {
    const AttentionSpan span{0, 8, 30, 4};  // keys rotated at 4 + i, read at 30 + i
    EXPECT_EQ(span.delta(), 26);
    EXPECT_EQ(rotation_delta(30, 4), 26);
    EXPECT_EQ(query_rope_position(span, 35, /*keys_rotated=*/true), 9);
    EXPECT_EQ(query_rope_position(span, 35, /*keys_rotated=*/false), 35);
    EXPECT_EQ(span.key_position(3), 33);
}

}  // namespace
}  // namespace lazyattn::kernels
