// The inner step of CPU attention for one decode query row: the G query heads of one GQA group
// against one block of 16 keys of their shared KV head. Scores are computed with lanes = keys
// (16 dot products reduced by one transpose-add tree, no per-key horizontal sums), the online
// softmax is one vector exp per block, and each head's output row stays in registers while the
// block's values stream past it. K and V of the block are read once for all G heads.
#pragma once

#include <cstdint>

#include "kernels/params/kv_dtype.h"

namespace lazyattn::backend::cpu::simd {

constexpr int kDecodeBlockKeys = 16;  // keys per block (the KV block size the fast path needs)
constexpr int kDecodeMaxHeadDim = 256;

// Attends keys [first, n) of one block (first < n <= 16; first > 0 where a sliding window hides
// the block's first keys; rows of k outside the range are read but ignored, so they must be
// readable; v rows outside it are not read). q: [G][d] rotated, scaled queries; m, l: [G] running
// max and denominator; o: [G][d] running output (unnormalized). d is a multiple of 16 and at most
// kDecodeMaxHeadDim.
using AttendDecodeBlockFn = void (*)(const float* q, int num_heads, const float* k, const float* v, int d, int first,
                                     int n, float* m, float* l, float* o);

// The AVX-512 kernel, or nullptr where the CPU lacks AVX-512F.
AttendDecodeBlockFn attend_decode_block();

// The same for keys and values as the pool stores them (k of type k_type, v of v_type: 16-bit
// widened, q8_0 / q4_0 dequantized in registers), or nullptr where the CPU lacks AVX-512F or
// the pair has no kernel (the caller then widens each block into fp32 first).
using AttendDecodeBlockStoredFn = void (*)(const float* q, int num_heads, const void* k, const void* v, int d,
                                           int first, int n, float* m, float* l, float* o);
AttendDecodeBlockStoredFn attend_decode_block_stored(kernels::KvDtype k_type, kernels::KvDtype v_type);

}  // namespace lazyattn::backend::cpu::simd
