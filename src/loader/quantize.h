// Quantization of fp32 rows into GGUF block formats, so synthetic models and tests can hold
// quantized weights. Round-to-nearest with one scale (and min) per block, as ggml's reference
// quantizers: not the importance-weighted search of llama-quantize, but bit-compatible output
// that any GGUF reader dequantizes.
//
// Error bounds per element (d is the block's fp16 scale as stored):
//   Q8_0: |x - x'| <= d / 2 (+ fp16 rounding of d)      d = amax / 127
//   Q4_0: |x - x'| <= d,  Q5_0 likewise                 d = amax / 8 (Q4_0), amax / 16 (Q5_0)
//   Q4_1: |x - x'| <= d / 2 + |fp16 error of min|       d = (max - min) / 15, Q5_1: / 31
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "loader/ggml_type.h"

namespace lazyattn::loader {

// Each writes n / 32 blocks to dst (ggml_row_size(type, n) bytes); n must be a multiple of 32.
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q4_0(const float* src, void* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
// K-quants (quantize_k.cpp): n a multiple of 256; round-to-nearest per sub-block.
void quantize_row_q2_K(const float* src, void* dst, int64_t n);
void quantize_row_q3_K(const float* src, void* dst, int64_t n);
void quantize_row_q4_K(const float* src, void* dst, int64_t n);
void quantize_row_q5_K(const float* src, void* dst, int64_t n);
void quantize_row_q6_K(const float* src, void* dst, int64_t n);

// Encodes `n` floats as `type` (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K): kUnsupported for
// other types, kInvalidArgument when n is not a multiple of the block size.
Expected<std::vector<uint8_t>> quantize(GgmlType type, const float* src, int64_t n);

}  // namespace lazyattn::loader
