// Block-attn materialization: copies a span's tokens (all layers) from its cached blocks to fresh
// blocks, re-rotating the keys by delta (R(delta) R(i) k = R(i + delta) k) so the copy reads with
// delta 0; values are copied bit for bit. Reference: KvStorage::copy_tokens, then
// kernels::ref::rope_apply of the copied keys at position delta, rounded to bf16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/status.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::backend::cuda {

struct KvCopyRotateParams {
    __nv_bfloat16* k_cache;  // layer 0 of [num_layers][num_blocks, num_kv_heads, block_size, head_dim]
    __nv_bfloat16* v_cache;  // same layout
    int64_t layer_stride;    // elements from one layer's cache to the next
    int32_t num_layers;
    const int32_t* src_blocks;  // [ceil(num_tokens / block_size)]
    const int32_t* dst_blocks;  // [ceil(num_tokens / block_size)], disjoint from src_blocks
    int32_t num_tokens;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t block_size;
    int32_t delta;  // rotate keys by this many positions
    kernels::RopeParams rope;
};

Status launch_kv_copy_rotate(const KvCopyRotateParams& p, cudaStream_t stream);

}  // namespace lazyattn::backend::cuda
