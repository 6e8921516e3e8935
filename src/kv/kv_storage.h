// KvStorage: the memory behind the block pool, per layer one K and one V array laid out
// [num_blocks, num_kv_heads, block_size, head_dim] so one head's keys of a block are contiguous
// (the attention kernels stream them). Elements are fp32, fp16 or bf16 (KvShape::dtype): keys and
// values arrive in fp32 and are rounded once when stored.
#pragma once

#include <cstdint>
#include <vector>

#include "core/large_buffer.h"
#include "core/status.h"
#include "kernels/params/attention_params.h"

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

class KvStorage {
public:
    // Throws std::bad_alloc when the memory cannot be had; allocate() is the checked form.
    explicit KvStorage(const KvShape& shape);
    // The pool's memory, or kResourceExhausted naming the size when it cannot be had (larger
    // than the machine's physical memory, or refused by the allocator): a pool that would only
    // fit in swap or overcommit is refused up front rather than killing the process later.
    static Expected<KvStorage> allocate(const KvShape& shape);
    const KvShape& shape() const { return shape_; }
    // Layer arrays, elements of shape().dtype.
    void* k(int32_t layer) { return k_[layer].data(); }
    void* v(int32_t layer) { return v_[layer].data(); }
    const void* k(int32_t layer) const { return k_[layer].data(); }
    const void* v(int32_t layer) const { return v_[layer].data(); }

    // Writes rows of new keys/values ([num_rows, num_kv_heads, head_dim], fp32) to their slots
    // (slot = block * block_size + offset).
    void store(int32_t layer, const float* k_rows, const float* v_rows, const int32_t* slots, int32_t num_rows);
    // Copies `num_tokens` tokens of every layer from one block list to another (block-attn).
    void copy_tokens(const int32_t* src_blocks, const int32_t* dst_blocks, int32_t num_tokens);
    // The keys of one block of one layer as fp32 ([num_kv_heads, block_size, head_dim]), and back
    // (block-attn re-rotates copied keys this way).
    void read_block_keys(int32_t layer, int32_t block, float* out) const;
    void write_block_keys(int32_t layer, int32_t block, const float* in);

private:
    int64_t element_bytes() const { return kernels::kv_dtype_bytes(shape_.dtype); }
    KvShape shape_;
    std::vector<LargeBuffer> k_, v_;
};

}  // namespace lazyattn::kv
