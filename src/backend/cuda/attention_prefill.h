// Host launchers of the prefill attention kernels (any number of query rows per sequence; see
// attention_prefill_kernel.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_attention_params.h"
#include "core/status.h"

namespace lazyattn::backend::cuda {

// Launches prefill attention for p (shapes validated by the caller).
Status launch_attention_prefill(const CudaAttentionParams& p, cudaStream_t stream);

// One instantiation per head_dim (attention_prefill_d64.cu, attention_prefill_d128.cu).
template <int D>
Status launch_attention_prefill_dim(const CudaAttentionParams& p, cudaStream_t stream);

}  // namespace lazyattn::backend::cuda
