// RoPE rotation of one head vector with AVX-512, for the attention kernels' lazy-k path (every key
// is rotated to its logical position as it is read, so this runs once per key and block). Same
// arithmetic as rope_rotate_with in rope_cpu.h, one fused multiply-add per element.
#pragma once

#include <cstdint>

namespace lazyattn::backend::cpu::simd {

// out = R(cs) in over the first rotary_dims dims (cs: rotary_dims/2 (cos, sin) pairs as
// rope_cos_sin fills them), the remaining head_dim - rotary_dims dims copied.
using RopeRotateFn = void (*)(const float* cs, const float* in, float* out, int32_t head_dim, int32_t rotary_dims,
                              bool neox);

// The AVX-512 kernel for the shapes it covers (rotary_dims a multiple of 32, head_dim of 16), or
// nullptr (then use rope_rotate_with).
RopeRotateFn rope_rotate_kernel(int32_t head_dim, int32_t rotary_dims);

}  // namespace lazyattn::backend::cpu::simd
