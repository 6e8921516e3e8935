// KvShape: the KV pool's geometry, the one fact about KV memory the bookkeeping (block pool,
// cache index, budgets) needs. The memory itself belongs to a backend (backend/kv_memory.h):
// per layer one K and one V array laid out [num_blocks, num_kv_heads, block_size, head_dim], so
// one head's keys of a block are contiguous (the attention kernels stream them). Elements are
// fp32, fp16 or bf16: keys and values arrive in fp32 and are rounded once when stored.
#pragma once

#include <cstdint>

#include "kernels/params/kv_dtype.h"

namespace lazyattn::kv {

using kernels::KvDtype;

struct KvShape {
    int32_t num_layers = 0;
    int32_t num_blocks = 0;
    int32_t num_kv_heads = 0;
    int32_t block_size = 16;
    int32_t head_dim = 0;
    KvDtype dtype = KvDtype::kF32;

    int64_t elements_per_block() const {  // K or V of one layer
        return int64_t(num_kv_heads) * block_size * head_dim;
    }
    int64_t elements_per_layer() const { return int64_t(num_blocks) * elements_per_block(); }
    int64_t bytes_per_block() const {  // K and V, all layers
        return 2 * int64_t(num_layers) * elements_per_block() * kernels::kv_dtype_bytes(dtype);
    }
};

}  // namespace lazyattn::kv
