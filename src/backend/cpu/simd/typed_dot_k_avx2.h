// The AVX2 decode row dots of Q2_K..Q5_K on the GGUF bytes (typed_dot_k_avx2.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyattn::backend::cpu::simd {

void avx2_dot_q4_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out);
void avx2_dot_q5_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out);
void avx2_dot_q2_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out);
void avx2_dot_q3_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out);

}  // namespace lazyattn::backend::cpu::simd
