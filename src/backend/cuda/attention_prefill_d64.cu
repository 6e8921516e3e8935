// Prefill attention kernels for head_dim 64 (one heavy instantiation set per translation unit).
#include "backend/cuda/attention_prefill_instance.cuh"

namespace lazyattn::backend::cuda {

template <>
Status launch_attention_prefill_dim<64>(const CudaAttentionParams& p, cudaStream_t stream) {
    return launch_prefill_for_dim<64>(p, stream);
}

}  // namespace lazyattn::backend::cuda
