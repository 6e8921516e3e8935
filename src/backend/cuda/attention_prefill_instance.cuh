// The body of the per-head_dim prefill launch, included once by attention_prefill_d64.cu and once
// by attention_prefill_d128.cu.
#pragma once

#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/attention_prefill_kernel.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/smem_opt_in.h"

namespace lazyattn::backend::cuda {

template <int D, bool KEYS_ROTATED>
Status launch_prefill_variant(const CudaAttentionParams& p, cudaStream_t stream) {
    using S = PrefillShape<D>;
    auto* kernel = &attention_prefill_kernel<D, KEYS_ROTATED>;
    static SmemOptIn opt_in;  // once per kernel and device
    LA_RETURN_IF_ERROR(
        opt_in.ensure(reinterpret_cast<const void*>(kernel), int(S::kSmemBytes), "attention_prefill_kernel"));
    const int q_tiles = (p.max_queries_per_seq + S::kBlockM - 1) / S::kBlockM;
    const dim3 grid(unsigned(q_tiles), unsigned(p.num_heads), unsigned(p.num_seqs));
    LA_LAUNCH_KERNEL(kernel, grid, dim3(S::kThreads), S::kSmemBytes, stream, p);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("attention_prefill_kernel");
    return {};
}

template <int D>
Status launch_prefill_for_dim(const CudaAttentionParams& p, cudaStream_t stream) {
    return p.keys_rotated ? launch_prefill_variant<D, true>(p, stream) : launch_prefill_variant<D, false>(p, stream);
}

}  // namespace lazyattn::backend::cuda
