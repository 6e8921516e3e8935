// Host launchers of the decode attention kernels (one query row per sequence; see
// attention_decode_kernel.cuh): split-K planning, the main kernel and the combine kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backend/cuda/cuda_attention_params.h"
#include "core/status.h"

namespace lazyattn::backend::cuda {

// Query heads handled together by one CTA for a GQA group size (1, 4 or 8).
int decode_heads_per_cta(int group);

// Splits of each sequence's keys: p.num_splits when set, else enough CTAs to fill `num_sms`
// multiprocessors, with at least 256 keys per split.
int decode_num_splits(const CudaAttentionParams& p, int num_sms);

// Floats of workspace the decode launch needs with `num_splits` splits (0 for one split).
size_t decode_workspace_floats(const CudaAttentionParams& p, int num_splits);

// Launches decode attention for p (p.max_queries_per_seq <= 1, shapes validated by the caller).
Status launch_attention_decode(const CudaAttentionParams& p, int num_splits, float* workspace, size_t workspace_floats,
                               cudaStream_t stream);

// One instantiation per head_dim (attention_decode_d64.cu, attention_decode_d128.cu).
template <int D>
Status launch_attention_decode_dim(const CudaAttentionParams& p, int num_splits, float* o_part, float* lse_part,
                                   cudaStream_t stream);

}  // namespace lazyattn::backend::cuda
