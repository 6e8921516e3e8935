// KV store: one CTA per new row; each thread writes whole elements, reading a rotated key's
// partner from the (unmodified) input row.
#include "backend/cuda/kv_store.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/rope_device.cuh"

namespace lazyattn::backend::cuda {

template <int kUnused = 0>
__global__ void __launch_bounds__(128) kv_store_kernel(const KvStoreParams p) {
    const int row = blockIdx.x;
    const int slot = p.slots[row];
    if (slot < 0) return;
    const int block = slot / p.block_size, offset = slot % p.block_size;
    const int d_total = p.head_dim;
    const int pos = p.rope_positions != nullptr ? p.rope_positions[row] : 0;
    for (int idx = threadIdx.x; idx < p.num_kv_heads * d_total; idx += blockDim.x) {
        const int h = idx / d_total, d = idx % d_total;
        const int64_t src = (int64_t(row) * p.num_kv_heads + h) * d_total;
        const int64_t dst = ((int64_t(block) * p.num_kv_heads + h) * p.block_size + offset) * d_total + d;
        float k = p.k_rows[src + d];
        RopeSlot rs{0, 0, true};
        if (p.rope_positions != nullptr && rope_slot(p.rope, d, &rs)) {
            k = rope_rotated(k, p.k_rows[src + rs.partner], rs.first, rope_cos_sin(p.rope, pos, rs.pair));
        }
        p.k_cache[dst] = float_to_bf16(k);
        p.v_cache[dst] = float_to_bf16(p.v_rows[src + d]);
    }
}

Status launch_kv_store(const KvStoreParams& p, cudaStream_t stream) {
    if (p.num_rows == 0) return {};
    auto* kernel = &kv_store_kernel<0>;
    LA_LAUNCH_KERNEL(kernel, dim3(unsigned(p.num_rows)), dim3(128), 0, stream, p);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("kv_store_kernel");
    return {};
}

}  // namespace lazyattn::backend::cuda
