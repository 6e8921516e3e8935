// RoPE in place: one CTA per row, one thread per (head, pair), so no element is read after
// another thread wrote it.
#include "backend/cuda/rope_apply.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/rope_device.cuh"

namespace lazyattn::backend::cuda {

template <int kUnused = 0>
__global__ void __launch_bounds__(128) rope_apply_kernel(const kernels::RopeApplyParams p) {
    const int row = blockIdx.x;
    const int pos = p.positions[row];
    const int half = p.rope.rotary_dims / 2;
    for (int idx = threadIdx.x; idx < p.num_heads * half; idx += blockDim.x) {
        const int h = idx / half, i = idx % half;
        float* x = p.x + (int64_t(row) * p.num_heads + h) * p.head_dim;
        const int a = p.rope.neox ? i : 2 * i;
        const int b = p.rope.neox ? i + half : 2 * i + 1;
        const float2 cs = rope_cos_sin(p.rope, pos, i);
        const float x0 = x[a], x1 = x[b];
        x[a] = x0 * cs.x - x1 * cs.y;
        x[b] = x0 * cs.y + x1 * cs.x;
    }
}

Status launch_rope_apply(const kernels::RopeApplyParams& p, cudaStream_t stream) {
    if (p.num_rows == 0 || p.rope.rotary_dims < 2) return {};
    auto* kernel = &rope_apply_kernel<0>;
    LA_LAUNCH_KERNEL(kernel, dim3(unsigned(p.num_rows)), dim3(128), 0, stream, p);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("rope_apply_kernel");
    return {};
}

}  // namespace lazyattn::backend::cuda
