// KvShape: the KV pool's geometry, the one fact about KV memory the bookkeeping (block pool,
// cache index, budgets) needs. The memory itself belongs to a backend (backend/kv_memory.h):
// per layer one K and one V array laid out [num_blocks, num_kv_heads, block_size, head_dim], so
// one head's keys of a block are contiguous (the attention kernels stream them). K and V each
// have an element type (kernels/params/kv_dtype.h: fp32, fp16, bf16, or q8_0 / q4_0 blocks along
// head_dim); keys and values arrive in fp32 and are converted once when stored. Every size below
// is in real bytes, scales included, so budgets count what the memory holds. A block table's two
// rules (how many blocks hold n tokens, and which slot holds token t) are written below, once.
#pragma once

#include <cstdint>
#include <vector>

#include "core/math.h"
#include "kernels/params/kv_dtype.h"

namespace lazyattn::kv {

using kernels::KvDtype;

struct KvShape {
    int32_t num_layers = 0;
    int32_t num_blocks = 0;
    int32_t num_kv_heads = 0;
    int32_t block_size = 16;
    int32_t head_dim = 0;
    KvDtype k_dtype = KvDtype::kF32;
    KvDtype v_dtype = KvDtype::kF32;

    kernels::KvTypes types() const { return {k_dtype, v_dtype}; }
    void set_types(const kernels::KvTypes& t) {
        k_dtype = t.k;
        v_dtype = t.v;
    }
    int64_t elements_per_block() const {  // K or V of one layer
        return int64_t(num_kv_heads) * block_size * head_dim;
    }
    int64_t elements_per_layer() const { return int64_t(num_blocks) * elements_per_block(); }
    // One token's key (or value) row of one KV head.
    int64_t k_row_bytes() const { return kernels::kv_bytes(k_dtype, head_dim); }
    int64_t v_row_bytes() const { return kernels::kv_bytes(v_dtype, head_dim); }
    // K (or V) of one layer of one block.
    int64_t k_bytes_per_block() const { return int64_t(num_kv_heads) * block_size * k_row_bytes(); }
    int64_t v_bytes_per_block() const { return int64_t(num_kv_heads) * block_size * v_row_bytes(); }
    int64_t bytes_per_block() const {  // K and V, all layers
        return int64_t(num_layers) * (k_bytes_per_block() + v_bytes_per_block());
    }
};

// Blocks holding `tokens` tokens.
inline int32_t blocks_for(int64_t tokens, int32_t block_size) { return int32_t(ceil_div(tokens, block_size)); }

// The slot of token t of a block table: block blocks[t / block_size], offset t % block_size.
inline int32_t slot_of(const std::vector<int32_t>& blocks, int32_t t, int32_t block_size) {
    return blocks[size_t(t / block_size)] * block_size + t % block_size;
}

}  // namespace lazyattn::kv
