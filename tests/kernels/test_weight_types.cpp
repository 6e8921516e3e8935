// The one weight-type enum (kernels/params/ggml_type.h): GGUF's numbering, the type table's
// geometry, and the types with a direct kernel are all types the table knows and dequantizes.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/params/ggml_type.h"
#include "kernels/params/matmul_params.h"
#include "kernels/params/quant_blocks.h"
#include "kernels/ref/dequantize_ref.h"

namespace lazyattn::kernels {
namespace {

static_assert(uint32_t(GgmlType::kQ4_0) == 2 && uint32_t(GgmlType::kQ8_0) == 8 && uint32_t(GgmlType::kQ6_K) == 14 &&
                  uint32_t(GgmlType::kBF16) == 30,
              "GGUF's numbering");
static_assert(weight_block_bytes(GgmlType::kQ4_1) == sizeof(BlockQ4_1));

TEST(WeightTypes, EveryKernelTypeIsKnownAndDequantizes) {
    int kernel_types = 0;
    for (uint32_t t = 0; t < 64; ++t) {
        if (!is_weight_type(t)) continue;
        ++kernel_types;
        const GgmlTypeTraits traits = ggml_type_traits(t);
        ASSERT_GT(traits.block_size, 0) << t;
        EXPECT_TRUE(traits.can_dequantize) << traits.name;
        std::vector<uint8_t> zeros(traits.type_size, 0);
        std::vector<float> out(size_t(traits.block_size), 1.0f);
        EXPECT_TRUE(ref::dequantize_row(GgmlType(t), zeros.data(), out.data(), traits.block_size).ok()) << traits.name;
        for (float v : out) EXPECT_EQ(v, 0.0f) << traits.name;
    }
    EXPECT_EQ(kernel_types, 13);  // F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K
}

TEST(WeightTypes, LegacyBlockSizesMatchTheTable) {
    for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ8_0}) {
        EXPECT_EQ(weight_block_bytes(t), ggml_type_traits(t).type_size) << ggml_type_name(t);
    }
}

}  // namespace
}  // namespace lazyattn::kernels
