// Block layouts of the quantized formats the CPU computes on directly (as in the GGUF
// specification): 32 elements per block, element j < 16 in the low nibble of qs[j] and element
// j + 16 in the high nibble. Scales are IEEE half. Activations are quantized to Q8_0 or Q8_1 per
// row before a quantized matmul, as llama.cpp does, so integer dot products do the bulk.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/params/ggml_type.h"

namespace lazyattn::kernels {

constexpr int kQuantBlock = 32;

struct BlockQ4_0 {
    uint16_t d;  // x = d * (q - 8)
    uint8_t qs[16];
};
struct BlockQ4_1 {
    uint16_t d;  // x = d * q + m
    uint16_t m;
    uint8_t qs[16];
};
struct BlockQ8_0 {
    uint16_t d;  // x = d * q
    int8_t qs[32];
};
struct BlockQ8_1 {
    uint16_t d;  // x = d * q
    uint16_t s;  // d * sum(q): lets a Q4_1 dot add m * sum(x) in one multiply
    int8_t qs[32];
};
// Q8_K: the activation format of the K-quants (super-blocks of 256), as in llama.cpp. x = d * q;
// bsums[k] = sum of qs[16k .. 16k+16), so a weight's per-16 minimum costs one multiply-add each.
constexpr int kSuperBlock = 256;
struct BlockQ8_K {
    float d;
    int8_t qs[256];
    int16_t bsums[16];
};
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block size");

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36,
              "GGUF block sizes");

// The legacy block formats with a register-tiled kernel (GgmlType Q4_0, Q4_1, Q8_0): their
// block sizes and the activation format each is multiplied with.
constexpr bool uses_q8_1(GgmlType w) { return w == GgmlType::kQ4_1; }
constexpr size_t weight_block_bytes(GgmlType w) {
    return w == GgmlType::kQ4_0 ? sizeof(BlockQ4_0) : w == GgmlType::kQ4_1 ? sizeof(BlockQ4_1) : sizeof(BlockQ8_0);
}
constexpr size_t activation_block_bytes(GgmlType w) { return uses_q8_1(w) ? sizeof(BlockQ8_1) : sizeof(BlockQ8_0); }

}  // namespace lazyattn::kernels
