// RMSNorm (one CTA per row, fp32 sum of squares), SwiGLU (grid-stride), embedding gather (one
// CTA per row).
#include "backend/cuda/elementwise.h"

#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_primitives.cuh"

namespace lazyattn::backend::cuda {

template <typename OutT>
__global__ void __launch_bounds__(256)
    rmsnorm_kernel(const float* x, const float* weight, OutT* out, int64_t dim, float eps) {
    LA_SHARED float partial[32];
    const float* xr = x + int64_t(blockIdx.x) * dim;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum = fmaf(xr[i], xr[i], sum);
    sum = warp_sum(sum);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    sum = lane < int(blockDim.x / 32) ? partial[lane] : 0.0f;
    sum = warp_sum(sum);
    const float inv = 1.0f / sqrtf(sum / float(dim) + eps);
    OutT* o = out + int64_t(blockIdx.x) * dim;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) store_as(o + i, xr[i] * inv * weight[i]);
}

template <typename OutT>
__global__ void __launch_bounds__(256) swiglu_kernel(const float* gate, const float* up, OutT* out, int64_t n) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float g = gate[i];
        store_as(out + i, g / (1.0f + expf(-g)) * up[i]);
    }
}

template <typename InT>
__global__ void __launch_bounds__(256)
    embedding_kernel(const InT* table, const int32_t* ids, float* out, int64_t dim, int64_t vocab_size) {
    const int32_t id = ids[blockIdx.x];
    float* o = out + int64_t(blockIdx.x) * dim;
    const bool valid = id >= 0 && id < vocab_size;
    const InT* row = table + (valid ? int64_t(id) * dim : 0);
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = valid ? load_as_float(row + i) : 0.0f;
}

__global__ void __launch_bounds__(256) add_inplace_kernel(float* x, const float* y, int64_t n) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) x[i] += y[i];
}

__global__ void __launch_bounds__(256) add_bias_kernel(float* y, const float* bias, int64_t n, int64_t dim) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] += bias[i % dim];
}

__global__ void __launch_bounds__(256) to_bf16_kernel(const float* x, bf16* out, int64_t n) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) store_as(out + i, x[i]);
}

namespace {

// Grid-stride launches: enough blocks to cover n, capped (each thread then loops).
unsigned grid_for(int64_t n) { return unsigned(std::min<int64_t>((n + 255) / 256, 65536)); }

template <typename OutT>
Status rmsnorm_impl(const float* x, const float* weight, OutT* out, int64_t num_rows, int64_t dim, float eps,
                    cudaStream_t stream) {
    if (num_rows == 0) return {};
    if (num_rows > INT32_MAX) return invalid_argument("rmsnorm: too many rows");
    auto* kernel = &rmsnorm_kernel<OutT>;
    LA_LAUNCH_KERNEL(kernel, dim3(unsigned(num_rows)), dim3(256), 0, stream, x, weight, out, dim, eps);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("rmsnorm_kernel");
    return {};
}

template <typename OutT>
Status swiglu_impl(const float* gate, const float* up, OutT* out, int64_t n, cudaStream_t stream) {
    if (n == 0) return {};
    const int64_t blocks = std::min<int64_t>((n + 255) / 256, 65536);
    auto* kernel = &swiglu_kernel<OutT>;
    LA_LAUNCH_KERNEL(kernel, dim3(unsigned(blocks)), dim3(256), 0, stream, gate, up, out, n);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("swiglu_kernel");
    return {};
}

template <typename InT>
Status embedding_impl(const InT* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                      int64_t vocab_size, cudaStream_t stream) {
    if (num_rows == 0) return {};
    if (num_rows > INT32_MAX) return invalid_argument("embedding: too many rows");
    auto* kernel = &embedding_kernel<InT>;
    LA_LAUNCH_KERNEL(kernel, dim3(unsigned(num_rows)), dim3(256), 0, stream, table, ids, out, dim, vocab_size);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("embedding_kernel");
    return {};
}

}  // namespace

Status launch_rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps,
                      cudaStream_t stream) {
    return rmsnorm_impl(x, weight, out, num_rows, dim, eps, stream);
}
Status launch_rmsnorm(const float* x, const float* weight, bf16* out, int64_t num_rows, int64_t dim, float eps,
                      cudaStream_t stream) {
    return rmsnorm_impl(x, weight, out, num_rows, dim, eps, stream);
}
Status launch_swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
    return swiglu_impl(gate, up, out, n, stream);
}
Status launch_swiglu(const float* gate, const float* up, bf16* out, int64_t n, cudaStream_t stream) {
    return swiglu_impl(gate, up, out, n, stream);
}
Status launch_embedding(const float* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                        int64_t vocab_size, cudaStream_t stream) {
    return embedding_impl(table, ids, out, num_rows, dim, vocab_size, stream);
}
Status launch_embedding(const bf16* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                        int64_t vocab_size, cudaStream_t stream) {
    return embedding_impl(table, ids, out, num_rows, dim, vocab_size, stream);
}

Status launch_add_inplace(float* x, const float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) return {};
    auto* kernel = &add_inplace_kernel;
    LA_LAUNCH_KERNEL(kernel, dim3(grid_for(n)), dim3(256), 0, stream, x, y, n);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("add_inplace_kernel");
    return {};
}
Status launch_add_bias(float* y, const float* bias, int64_t num_rows, int64_t dim, cudaStream_t stream) {
    const int64_t n = num_rows * dim;
    if (n == 0) return {};
    auto* kernel = &add_bias_kernel;
    LA_LAUNCH_KERNEL(kernel, dim3(grid_for(n)), dim3(256), 0, stream, y, bias, n, dim);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("add_bias_kernel");
    return {};
}
Status launch_to_bf16(const float* x, bf16* out, int64_t n, cudaStream_t stream) {
    if (n == 0) return {};
    auto* kernel = &to_bf16_kernel;
    LA_LAUNCH_KERNEL(kernel, dim3(grid_for(n)), dim3(256), 0, stream, x, out, n);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("to_bf16_kernel");
    return {};
}

}  // namespace lazyattn::backend::cuda
