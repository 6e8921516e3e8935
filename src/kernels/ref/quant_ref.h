// Scalar reference of the quantized matmul: activation quantization (Q8_0, Q8_1) and the block
// dot products, written from the block layouts. The SIMD kernels must agree with these up to
// float summation order.
#pragma once

#include <cstdint>

#include "kernels/params/quant_blocks.h"

namespace lazyattn::kernels::ref {

// n a multiple of 32. Scale d = amax / 127, q = round-half-even(x * 127 / amax), as llama.cpp's
// x86 quantizer does.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n);

// Dot product of one weight row (n elements) with one quantized activation row.
float vec_dot(GgmlType type, const void* w_row, const void* x_row, int64_t n);

// y[r, o] = dot(w row o, x row r): x is fp32 [num_rows, in_dim], quantized here.
void quant_matmul(GgmlType type, const void* w, const float* x, float* y, int64_t num_rows, int64_t in_dim,
                  int64_t out_dim);

}  // namespace lazyattn::kernels::ref
