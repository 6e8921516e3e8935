// KvStorage: the memory behind the block pool, per layer one K and one V array laid out
// [num_blocks, num_kv_heads, block_size, head_dim] so one head's keys of a block are contiguous
// (the attention kernels stream them).
#pragma once

#include <cstdint>
#include <vector>

#include "core/large_buffer.h"

namespace lazyattn::kv {

struct KvShape {
    int32_t num_layers = 0;
    int32_t num_blocks = 0;
    int32_t num_kv_heads = 0;
    int32_t block_size = 16;
    int32_t head_dim = 0;

    int64_t floats_per_layer() const {
        return int64_t(num_blocks) * num_kv_heads * block_size * head_dim;
    }
    int64_t bytes_per_block() const {  // K and V, all layers
        return 2 * int64_t(num_layers) * num_kv_heads * block_size * head_dim * int64_t(sizeof(float));
    }
};

class KvStorage {
public:
    explicit KvStorage(const KvShape& shape);
    const KvShape& shape() const { return shape_; }
    float* k(int32_t layer) { return reinterpret_cast<float*>(k_[layer].data()); }
    float* v(int32_t layer) { return reinterpret_cast<float*>(v_[layer].data()); }
    const float* k(int32_t layer) const { return reinterpret_cast<const float*>(k_[layer].data()); }
    const float* v(int32_t layer) const { return reinterpret_cast<const float*>(v_[layer].data()); }

    // Writes rows of new keys/values ([num_rows, num_kv_heads, head_dim]) to their slots
    // (slot = block * block_size + offset).
    void store(int32_t layer, const float* k_rows, const float* v_rows, const int32_t* slots,
               int32_t num_rows);
    // Copies `num_tokens` tokens of every layer from one block list to another (block-attn).
    void copy_tokens(const int32_t* src_blocks, const int32_t* dst_blocks, int32_t num_tokens);

private:
    KvShape shape_;
    std::vector<LargeBuffer> k_, v_;
};

}  // namespace lazyattn::kv
