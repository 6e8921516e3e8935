// The inner step of CPU attention for a tile of up to 16 query vectors (query rows x the heads of
// one GQA group), lanes = queries: one key block's scores are 16 fmas per key dimension with no
// horizontal sums, the online softmax runs across registers, and exp is vectorized.
#pragma once

#include <cstdint>

namespace lazyattn::backend::cpu::simd {

constexpr int kAttnTileLanes = 16;  // queries per tile
constexpr int kAttnBlockKeys = 16;  // keys per block (the KV block size the fast path needs)

// Attends one block of kAttnBlockKeys keys (all 16 rows of k and v must be readable and finite;
// pad a partial block with zeros). qt: [d][16] rotated, scaled queries (transposed); nfirst[16],
// nvis[16]: query lane q sees keys [nfirst[q], nvis[q]) of the block (nfirst > 0 where a sliding
// window hides the block's first keys); m, l: [16] running max and denominator;
// ot: [d][16] running output (transposed, unnormalized). d is a multiple of 16.
using AttendBlockFn = void (*)(const float* qt, const float* k, const float* v, int d, const int32_t* nfirst,
                               const int32_t* nvis, float* m, float* l, float* ot);

// The AVX-512 kernel, or nullptr where the CPU lacks AVX-512F.
AttendBlockFn attend_block_q16();

}  // namespace lazyattn::backend::cpu::simd
