// quantize -> dequantize round trips, element by element, within the bounds quantize.h states.
// Inputs are fresh random values each run (seed printed; replay with LAZYATTN_TEST_SEED).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/fp16.h"
#include "loader/dequantize.h"
#include "loader/quantize.h"
#include "random_inputs.h"

namespace lazyattn::loader {
namespace {

using lazyattn::testing::random_floats;
using lazyattn::testing::test_seed;

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x) {
    auto q = quantize(type, x.data(), static_cast<int64_t>(x.size()));
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    if (!q.ok()) return {};
    EXPECT_EQ(q->size(), ggml_row_size(type, static_cast<int64_t>(x.size())));
    std::vector<float> y(x.size());
    const Status st = dequantize_row(type, q->data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_TRUE(st.ok()) << st.to_string();
    return y;
}

// Per-element bound for a 32-element block, from the block's own statistics.
float block_bound(GgmlType type, const float* x) {
    float mn = x[0], mx = x[0], amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
        mn = std::min(mn, x[j]);
        mx = std::max(mx, x[j]);
        amax = std::max(amax, std::fabs(x[j]));
    }
    const float fp16_rel = 1.0f / 1024.0f;  // the stored scale is fp16: 2^-11 relative, doubled
    switch (type) {
        case GgmlType::kQ8_0:
            return 0.5f * amax / 127.0f * (1 + fp16_rel) + 1e-7f;
        case GgmlType::kQ4_0:
            return amax / 8.0f * (1 + 8 * fp16_rel) + 1e-7f;
        case GgmlType::kQ5_0:
            return amax / 16.0f * (1 + 16 * fp16_rel) + 1e-7f;
        case GgmlType::kQ4_1:
            return 0.5f * (mx - mn) / 15.0f * (1 + 16 * fp16_rel) + std::fabs(mn) * fp16_rel + 1e-7f;
        case GgmlType::kQ5_1:
            return 0.5f * (mx - mn) / 31.0f * (1 + 32 * fp16_rel) + std::fabs(mn) * fp16_rel + 1e-7f;
        default:
            return 0.0f;
    }
}

class QuantizeRoundTrip : public ::testing::TestWithParam<GgmlType> {};

TEST_P(QuantizeRoundTrip, WithinBlockBound) {
    const GgmlType type = GetParam();
    std::mt19937_64 rng(test_seed());
    for (size_t n : {32u, 64u, 32u * 17u, 32u * 99u}) {
        // Scales stay in fp16's normal range (amax / 127 >= 2^-14): subnormal fp16 scales lose
        // relative precision, a limit of the format rather than of the quantizer.
        for (float scale : {0.05f, 1.0f, 300.0f}) {
            std::vector<float> x = random_floats(rng, n, -scale, scale);
            x[n / 2] = 0.0f;  // an exact zero inside a block
            const std::vector<float> y = round_trip(type, x);
            ASSERT_EQ(y.size(), n);
            for (size_t b = 0; b < n / 32; ++b) {
                const float bound = block_bound(type, x.data() + 32 * b);
                for (size_t j = 32 * b; j < 32 * (b + 1); ++j) {
                    ASSERT_FALSE(std::isnan(y[j])) << ggml_type_name(type) << " element " << j;
                    ASSERT_LE(std::fabs(y[j] - x[j]), bound) << ggml_type_name(type) << " n=" << n << " scale=" << scale
                                                             << " element " << j << ": " << x[j] << " -> " << y[j];
                }
            }
        }
    }
}

TEST_P(QuantizeRoundTrip, ZerosStayZero) {
    const std::vector<float> x(64, 0.0f);
    for (float v : round_trip(GetParam(), x)) EXPECT_EQ(v, 0.0f);
}

TEST_P(QuantizeRoundTrip, ExtremeOfBlockIsNearlyExact) {
    // The element of largest magnitude maps to the end of the quant range: its error is only
    // the fp16 rounding of the scale.
    std::mt19937_64 rng(test_seed() + 1);
    std::vector<float> x = random_floats(rng, 32, -1.0f, 1.0f);
    x[7] = -2.5f;
    const std::vector<float> y = round_trip(GetParam(), x);
    ASSERT_EQ(y.size(), 32u);
    EXPECT_NEAR(y[7], -2.5f, 2.5f * 2e-3f);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeRoundTrip,
                         ::testing::Values(GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                                           GgmlType::kQ5_1),
                         [](const auto& info) { return std::string(ggml_type_name(info.param)); });

TEST(Quantize, Q8_0StoresExpectedBytes) {
    // amax = 127 gives d = 1 exactly: the quants are the inputs rounded.
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i * 8 - 127) + 0.25f;
    x[0] = -127.0f;
    auto q = quantize(GgmlType::kQ8_0, x.data(), 32);
    ASSERT_TRUE(q.ok());
    uint16_t d;
    std::memcpy(&d, q->data(), 2);
    EXPECT_EQ(d, 0x3c00);  // 1.0
    for (int i = 1; i < 32; ++i) EXPECT_EQ(static_cast<int8_t>((*q)[2 + i]), i * 8 - 127) << i;
}

TEST(Quantize, Q4_1AffineCodes) {
    // min 0, max 15: d = 1, m = 0, quants are the values and j / j + 16 share a byte.
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i % 16);
    auto q = quantize(GgmlType::kQ4_1, x.data(), 32);
    ASSERT_TRUE(q.ok());
    for (int j = 0; j < 16; ++j) EXPECT_EQ((*q)[4 + j], static_cast<uint8_t>(j | (j << 4))) << j;
}

TEST(Quantize, HalfTypesRoundTrip) {
    std::mt19937_64 rng(test_seed() + 2);
    const std::vector<float> x = random_floats(rng, 99, -50.0f, 50.0f);
    const std::vector<float> h = round_trip(GgmlType::kF16, x);
    const std::vector<float> bf = round_trip(GgmlType::kBF16, x);
    const std::vector<float> f = round_trip(GgmlType::kF32, x);
    for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_LE(std::fabs(h[i] - x[i]), std::fabs(x[i]) * std::ldexp(1.0f, -11) + 1e-7f) << i;
        EXPECT_LE(std::fabs(bf[i] - x[i]), std::fabs(x[i]) * std::ldexp(1.0f, -8)) << i;
        EXPECT_EQ(f[i], x[i]) << i;
    }
}

TEST(Quantize, RejectsUnsupportedAndPartialBlocks) {
    std::vector<float> x(256, 1.0f);
    EXPECT_EQ(quantize(static_cast<GgmlType>(20), x.data(), 256).status().code(), StatusCode::kUnsupported);  // IQ4_NL
    EXPECT_EQ(quantize(GgmlType::kQ8_0, x.data(), 33).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lazyattn::loader
