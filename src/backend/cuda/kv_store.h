// KV store: scatters new K/V rows (fp32) into their paged slots as bf16, optionally rotating keys
// to given positions first (lazy mode stores keys rotated). Reference: kernels::ref::rope_apply
// followed by KvStorage::store and a round to bf16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/status.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::backend::cuda {

struct KvStoreParams {
    const float* k_rows;            // [num_rows, num_kv_heads, head_dim]
    const float* v_rows;            // [num_rows, num_kv_heads, head_dim]
    const int32_t* slots;           // [num_rows] block * block_size + offset; negative: skip the row
    const int32_t* rope_positions;  // [num_rows] rotate keys to these positions; nullptr: store as given
    __nv_bfloat16* k_cache;         // [num_blocks, num_kv_heads, block_size, head_dim]
    __nv_bfloat16* v_cache;         // [num_blocks, num_kv_heads, block_size, head_dim]
    int32_t num_rows;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t block_size;
    kernels::RopeParams rope;  // used when rope_positions is set
};

Status launch_kv_store(const KvStoreParams& p, cudaStream_t stream);

}  // namespace lazyattn::backend::cuda
