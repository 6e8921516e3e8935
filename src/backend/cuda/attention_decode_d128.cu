// Decode attention kernels for head_dim 128 (one heavy instantiation set per translation unit).
#include "backend/cuda/attention_decode_instance.cuh"

namespace lazyattn::backend::cuda {

template <>
Status launch_attention_decode_dim<128>(const CudaAttentionParams& p, int num_splits, float* o_part, float* lse_part,
                                        cudaStream_t stream) {
    return launch_decode_for_dim<128>(p, num_splits, o_part, lse_part, stream);
}

}  // namespace lazyattn::backend::cuda
