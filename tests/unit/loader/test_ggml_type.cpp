// Block geometry: the sizes every offset computation in the parser depends on.
#include <gtest/gtest.h>

#include "loader/ggml_type.h"

namespace lazyattn::loader {
namespace {

struct Geometry {
    uint32_t id;
    const char* name;
    int64_t block;
    size_t bytes;
    bool dequantizable;
};

// Block structs of ggml-common.h: e.g. Q4_K = half d, half dmin, 12 scale bytes, 128 quant bytes.
const Geometry kExpected[] = {
    {0, "F32", 1, 4, true},
    {1, "F16", 1, 2, true},
    {2, "Q4_0", 32, 2 + 16, true},
    {3, "Q4_1", 32, 4 + 16, true},
    {6, "Q5_0", 32, 2 + 4 + 16, true},
    {7, "Q5_1", 32, 4 + 4 + 16, true},
    {8, "Q8_0", 32, 2 + 32, true},
    {9, "Q8_1", 32, 4 + 32, true},
    {10, "Q2_K", 256, 16 + 64 + 4, true},
    {11, "Q3_K", 256, 32 + 64 + 12 + 2, true},
    {12, "Q4_K", 256, 4 + 12 + 128, true},
    {13, "Q5_K", 256, 4 + 12 + 32 + 128, true},
    {14, "Q6_K", 256, 128 + 64 + 16 + 2, true},
    {15, "Q8_K", 256, 4 + 256 + 32, true},
    {16, "IQ2_XXS", 256, 66, false},
    {20, "IQ4_NL", 32, 18, false},
    {24, "I8", 1, 1, true},
    {26, "I32", 1, 4, true},
    {28, "F64", 1, 8, true},
    {30, "BF16", 1, 2, true},
};

TEST(GgmlType, KnownGeometry) {
    for (const Geometry& g : kExpected) {
        const GgmlTypeTraits t = ggml_type_traits(g.id);
        EXPECT_STREQ(t.name, g.name) << g.id;
        EXPECT_EQ(t.block_size, g.block) << g.name;
        EXPECT_EQ(t.type_size, g.bytes) << g.name;
        EXPECT_EQ(t.can_dequantize, g.dequantizable) << g.name;
    }
}

TEST(GgmlType, UnknownNumbersHaveNoGeometry) {
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 1000u, 0xffffffffu}) {
        EXPECT_EQ(ggml_type_traits(id).block_size, 0) << id;
        EXPECT_FALSE(ggml_type_traits(id).can_dequantize) << id;
    }
}

TEST(GgmlType, RowSize) {
    EXPECT_EQ(ggml_row_size(GgmlType::kF32, 7), 28u);
    EXPECT_EQ(ggml_row_size(GgmlType::kQ4_1, 576), 576u / 32 * 20);
    EXPECT_EQ(ggml_row_size(GgmlType::kQ8_0, 64), 68u);
    EXPECT_EQ(ggml_row_size(GgmlType::kQ6_K, 512), 420u);
    EXPECT_EQ(ggml_row_size(GgmlType::kBF16, 3), 6u);
    EXPECT_STREQ(ggml_type_name(GgmlType::kQ5_K), "Q5_K");
}

}  // namespace
}  // namespace lazyattn::loader
