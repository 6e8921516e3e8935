// The KV element types' conversions (kernels/params/kv_dtype.h) on fresh random rows: q8_0 and
// q4_0 rows decode through the GGUF block dequantizer exactly as through kv_to_f32, stay within
// their quantizer's error bound, and sizes count the scales.
#include <algorithm>
#include <cmath>

#include "kernels/params/kv_dtype.h"
#include "kernels/ref/dequantize_ref.h"
#include "random_inputs.h"

namespace lazyattn {
namespace {

using kernels::KvDtype;

TEST(KvDtype, NamesSizesAndGroups) {
    for (const KvDtype t : {KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16, KvDtype::kQ8_0, KvDtype::kQ4_0}) {
        EXPECT_EQ(kernels::parse_kv_dtype(kernels::kv_dtype_name(t)), t);
    }
    EXPECT_FALSE(kernels::parse_kv_dtype("q5_0").has_value());
    EXPECT_EQ(kernels::kv_bytes(KvDtype::kF16, 64), 128);
    EXPECT_EQ(kernels::kv_bytes(KvDtype::kQ8_0, 64), 68);  // 1.88x the tokens of f16 per byte
    EXPECT_EQ(kernels::kv_bytes(KvDtype::kQ4_0, 64), 36);  // 3.56x
    EXPECT_EQ(kernels::kv_dtype_group(KvDtype::kQ4_0), 32);
    EXPECT_EQ(kernels::kv_types_name({KvDtype::kQ8_0, KvDtype::kQ8_0}), "q8_0");
    EXPECT_EQ(kernels::kv_types_name({KvDtype::kQ8_0, KvDtype::kF16}), "K q8_0, V f16");
}

class KvQuantTest : public ::testing::TestWithParam<KvDtype> {};

TEST_P(KvQuantTest, RowsDecodeAsGgufBlocksWithinTheQuantizerBound) {
    const KvDtype t = GetParam();
    std::mt19937_64 rng(testing::test_seed() + int(t));
    const int64_t n = 32 * 40;
    auto x = testing::random_floats(rng, n, -3.0f, 3.0f);
    for (int64_t i = 0; i < 32; ++i) x[i] = 0.0f;  // an all-zero group: scale 0, decodes to 0
    // A small group (amax ~0.03): its scale stays a normal fp16, so precision stays relative (below
    // amax ~ 0.008 the fp16 scale goes subnormal and precision absolute, as in llama.cpp).
    for (int64_t i = 32; i < 64; ++i) x[i] *= 1e-2f;
    std::vector<uint8_t> q(size_t(kernels::kv_bytes(t, n)));
    kernels::f32_to_kv(x.data(), t, q.data(), n);
    std::vector<float> ours(n), gguf(n);
    kernels::kv_to_f32(q.data(), t, ours.data(), n);
    ASSERT_TRUE(kernels::ref::dequantize_row(t == KvDtype::kQ8_0 ? kernels::GgmlType::kQ8_0 : kernels::GgmlType::kQ4_0,
                                             q.data(), gguf.data(), n)
                    .ok());
    EXPECT_EQ(ours, gguf);
    for (int64_t g = 0; g < n / 32; ++g) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[g * 32 + j]));
        // q8_0: half a step of amax / 127; q4_0: a full step of amax / 8 (the largest magnitude
        // maps to -8 exactly, so the other sign tops out at 7 steps). Plus the fp16 scale's rounding.
        const float step = t == KvDtype::kQ8_0 ? amax / 127 : amax / 8;
        const float bound = (t == KvDtype::kQ8_0 ? 0.5f : 1.0f) * step + amax * 2e-3f;
        for (int j = 0; j < 32; ++j) {
            ASSERT_LE(std::fabs(ours[g * 32 + j] - x[g * 32 + j]), bound) << "group " << g << " value " << j;
        }
        if (g == 0) {
            for (int j = 0; j < 32; ++j) ASSERT_EQ(ours[j], 0.0f);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, KvQuantTest, ::testing::Values(KvDtype::kQ8_0, KvDtype::kQ4_0),
                         [](const auto& info) { return std::string(kernels::kv_dtype_name(info.param)); });

}  // namespace
}  // namespace lazyattn
