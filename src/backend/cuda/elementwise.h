// Row-wise and elementwise ops of the layer loop: RMSNorm, SwiGLU and the embedding gather. Inputs
// are fp32 activations; outputs fp32, or bf16 where they feed a bf16 GEMM. References:
// kernels::ref::rmsnorm and ::swiglu; the gather is a row copy.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/status.h"

namespace lazyattn::backend::cuda {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight; x [num_rows, dim], weight [dim].
Status launch_rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps,
                      cudaStream_t stream);
Status launch_rmsnorm(const float* x, const float* weight, __nv_bfloat16* out, int64_t num_rows, int64_t dim, float eps,
                      cudaStream_t stream);

// out = silu(gate) * up over n elements (out may alias gate or up when of the same type).
Status launch_swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);
Status launch_swiglu(const float* gate, const float* up, __nv_bfloat16* out, int64_t n, cudaStream_t stream);

// out[r, :] = table[ids[r], :] as fp32; table [vocab_size, dim]; ids outside [0, vocab_size) give zeros.
Status launch_embedding(const float* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                        int64_t vocab_size, cudaStream_t stream);
Status launch_embedding(const __nv_bfloat16* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                        int64_t vocab_size, cudaStream_t stream);

// x += y over n elements (the residual adds of the layer loop).
Status launch_add_inplace(float* x, const float* y, int64_t n, cudaStream_t stream);
// y[r, :] += bias over num_rows rows of dim elements (a linear layer's bias).
Status launch_add_bias(float* y, const float* bias, int64_t num_rows, int64_t dim, cudaStream_t stream);
// out = x rounded to bf16 over n elements (a GEMM's fp32 input).
Status launch_to_bf16(const float* x, __nv_bfloat16* out, int64_t n, cudaStream_t stream);

}  // namespace lazyattn::backend::cuda
