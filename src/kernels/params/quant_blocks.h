// Block layouts of the quantized formats the CPU computes on directly (as in the GGUF
// specification): 32 elements per block, element j < 16 in the low nibble of qs[j] and element
// j + 16 in the high nibble. Scales are IEEE half. Activations are quantized to Q8_0 or Q8_1 per
// row before a quantized matmul, as llama.cpp does, so integer dot products do the bulk.
#pragma once

#include <cstddef>
#include <cstdint>

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

// Weight formats with a direct kernel, numbered as GGUF's tensor types.
enum class QuantWeight : uint32_t { kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8 };

// The activation format each weight format is multiplied with.
inline bool uses_q8_1(QuantWeight w) { return w == QuantWeight::kQ4_1; }
inline size_t weight_block_bytes(QuantWeight w) {
    return w == QuantWeight::kQ4_0   ? sizeof(BlockQ4_0)
           : w == QuantWeight::kQ4_1 ? sizeof(BlockQ4_1)
                                     : sizeof(BlockQ8_0);
}
inline size_t activation_block_bytes(QuantWeight w) { return uses_q8_1(w) ? sizeof(BlockQ8_1) : sizeof(BlockQ8_0); }

}  // namespace lazyattn::kernels
