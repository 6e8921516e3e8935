// Copy-and-re-rotate: one CTA per (token, layer); the rotation reads the source block, so the
// destination is written once per element.
#include "backend/cuda/kv_copy_rotate.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/rope_device.cuh"

namespace lazyattn::backend::cuda {

template <int kUnused = 0>
__global__ void __launch_bounds__(128) kv_copy_rotate_kernel(const KvCopyRotateParams p) {
    const int t = blockIdx.x;
    const int64_t layer_off = int64_t(blockIdx.y) * p.layer_stride;
    const int b = t / p.block_size, offset = t % p.block_size;
    const int d_total = p.head_dim;
    for (int idx = threadIdx.x; idx < p.num_kv_heads * d_total; idx += blockDim.x) {
        const int h = idx / d_total, d = idx % d_total;
        const int64_t src =
            layer_off + ((int64_t(p.src_blocks[b]) * p.num_kv_heads + h) * p.block_size + offset) * d_total;
        const int64_t dst =
            layer_off + ((int64_t(p.dst_blocks[b]) * p.num_kv_heads + h) * p.block_size + offset) * d_total;
        float k = bf16_to_float(p.k_cache[src + d]);
        RopeSlot rs{0, 0, true};
        if (p.delta != 0 && rope_slot(p.rope, d, &rs)) {
            k = rope_rotated(k, bf16_to_float(p.k_cache[src + rs.partner]), rs.first,
                             rope_cos_sin(p.rope, p.delta, rs.pair));
        }
        p.k_cache[dst + d] = float_to_bf16(k);
        p.v_cache[dst + d] = p.v_cache[src + d];
    }
}

Status launch_kv_copy_rotate(const KvCopyRotateParams& p, cudaStream_t stream) {
    if (p.num_tokens == 0 || p.num_layers == 0) return {};
    auto* kernel = &kv_copy_rotate_kernel<0>;
    LA_LAUNCH_KERNEL(kernel, dim3(unsigned(p.num_tokens), unsigned(p.num_layers)), dim3(128), 0, stream, p);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("kv_copy_rotate_kernel");
    return {};
}

}  // namespace lazyattn::backend::cuda
