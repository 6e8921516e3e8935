// The AVX2 prefill tiles (typed_tile_avx2.cpp), for the AVX2 set and for the types the AVX-512
// set has no tile of its own for.
#pragma once

#include "backend/cpu/simd/typed_dot.h"

namespace lazyattn::backend::cpu::simd {

// K-quants, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, F16/BF16; nullptr for fp32.
const TypedTile* avx2_tile_of(kernels::GgmlType t);
// Q5_0/Q5_1 only.
const TypedTile* avx2_q5_tile_of(kernels::GgmlType t);

}  // namespace lazyattn::backend::cpu::simd
