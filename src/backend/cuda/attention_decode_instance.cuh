// The body of the per-head_dim decode launch, included once by attention_decode_d64.cu and once by
// attention_decode_d128.cu so each translation unit compiles one head_dim's six kernels.
#pragma once

#include "backend/cuda/attention_decode.h"
#include "backend/cuda/attention_decode_kernel.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/smem_opt_in.h"

namespace lazyattn::backend::cuda {

template <int D, int GP, bool KEYS_ROTATED>
Status launch_decode_variant(const CudaAttentionParams& p, const DecodeSplitArgs& split, cudaStream_t stream) {
    auto* kernel = &attention_decode_kernel<D, GP, KEYS_ROTATED>;
    constexpr size_t kSmem = decode_smem_bytes<D, GP>();
    // More than 48 KiB of shared memory: opted in once per kernel and device.
    static SmemOptIn opt_in;
    LA_RETURN_IF_ERROR(opt_in.ensure(reinterpret_cast<const void*>(kernel), int(kSmem), "attention_decode_kernel"));
    const int group = p.num_heads / p.num_kv_heads;
    const dim3 grid(unsigned(p.num_kv_heads * ((group + GP - 1) / GP)), unsigned(p.num_seqs),
                    unsigned(split.num_splits));
    LA_LAUNCH_KERNEL(kernel, grid, dim3(DecodeShape<D>::kThreads), kSmem, stream, p, split);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("attention_decode_kernel");
    if (split.num_splits > 1) {
        auto* combine = &attention_decode_combine_kernel<D>;
        LA_LAUNCH_KERNEL(combine, dim3(unsigned(p.num_seqs), unsigned(p.num_heads)), dim3(128), 0, stream, p, split);
        LA_CUDA_RETURN_IF_LAUNCH_FAILED("attention_decode_combine_kernel");
    }
    return {};
}

template <int D>
Status launch_decode_for_dim(const CudaAttentionParams& p, int num_splits, float* o_part, float* lse_part,
                             cudaStream_t stream) {
    const DecodeSplitArgs split{num_splits, o_part, lse_part};
    const int per_cta = decode_heads_per_cta(p.num_heads / p.num_kv_heads);
    if (p.keys_rotated) {
        if (per_cta == 1) return launch_decode_variant<D, 1, true>(p, split, stream);
        if (per_cta == 4) return launch_decode_variant<D, 4, true>(p, split, stream);
        return launch_decode_variant<D, 8, true>(p, split, stream);
    }
    if (per_cta == 1) return launch_decode_variant<D, 1, false>(p, split, stream);
    if (per_cta == 4) return launch_decode_variant<D, 4, false>(p, split, stream);
    return launch_decode_variant<D, 8, false>(p, split, stream);
}

}  // namespace lazyattn::backend::cuda
