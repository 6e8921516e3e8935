// Parameters of the CUDA paged attention kernels: kernels::AttentionParams with the KV cache in
// bf16 on the device. Queries and outputs stay fp32; scores, softmax and accumulation are fp32.
// Spans, sequences and the RoPE semantics (keys_rotated, delta = logical_start - stored_base) are
// exactly those of kernels/params/attention_params.h; every pointer is device memory.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/params/attention_params.h"

namespace lazyattn::backend::cuda {

struct CudaAttentionParams {
    const float* q;                // [num_rows, num_heads, head_dim], unrotated
    const int32_t* q_pos;          // [num_rows] logical position of each query row
    float* out;                    // [num_rows, num_heads, head_dim]
    const __nv_bfloat16* k_cache;  // [num_blocks, num_kv_heads, block_size, head_dim]
    const __nv_bfloat16* v_cache;  // [num_blocks, num_kv_heads, block_size, head_dim]
    const int32_t* block_ids;      // referenced by spans
    const kernels::AttentionSpan* spans;
    const kernels::KeyOverride* overrides;  // referenced by spans (null: none)
    const kernels::AttentionSeq* seqs;      // [num_seqs]
    int32_t num_seqs;
    int32_t num_heads;
    int32_t num_kv_heads;
    int32_t head_dim;  // 64 or 128
    int32_t block_size;
    float scale;               // usually 1/sqrt(head_dim)
    kernels::RopeParams rope;  // inv_freq and cos_sin_table on the device
    bool keys_rotated;         // false: lazy-k (the kernel rotates each key)
    // Sliding window on logical distance, as kernels::AttentionParams::sliding_window (0: none).
    // The kernels mask keys outside it; they still walk the tiles before it.
    int32_t sliding_window = 0;

    // Host-side facts of the plan (the device arrays above are never read on the host).
    int32_t max_queries_per_seq;  // max num_queries over seqs: 1 selects the decode kernel
    int32_t max_kv_tokens;        // max over seqs of the summed num_tokens of its spans
    int32_t num_splits;           // decode split-K over the keys: 0 = choose, else forced
};

}  // namespace lazyattn::backend::cuda
