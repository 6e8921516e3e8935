#include "store/segment_blocks.h"

#include <algorithm>
#include <cstring>

namespace lazyattn::store {

Status export_segment_blocks(const backend::KvMemory& kv, std::span<const kv::BlockId> blocks, int32_t num_tokens,
                             uint8_t* out) {
    const kv::KvShape& s = kv.shape();
    const int64_t bpb = s.bytes_per_block();
    for (size_t i = 0; i < blocks.size(); ++i) LA_RETURN_IF_ERROR(kv.read_block(blocks[i], out + int64_t(i) * bpb));
    const int32_t last_rows = num_tokens - (int32_t(blocks.size()) - 1) * s.block_size;
    if (blocks.empty() || last_rows >= s.block_size) return {};
    // The last block's padding rows hold stale KV of whatever the block held before.
    uint8_t* part = out + int64_t(blocks.size() - 1) * bpb;
    for (int32_t i = 0; i < 2 * s.num_layers; ++i) {  // [layer][K, V]
        const int64_t row = i % 2 == 0 ? s.k_row_bytes() : s.v_row_bytes();
        for (int32_t h = 0; h < s.num_kv_heads; ++h, part += s.block_size * row) {
            std::memset(part + last_rows * row, 0, size_t((s.block_size - last_rows) * row));
        }
    }
    return {};
}

Status import_segment_blocks(backend::KvMemory& kv, std::span<const kv::BlockId> blocks, const uint8_t* in,
                             int32_t num_present) {
    const int64_t bpb = kv.shape().bytes_per_block();
    for (size_t i = size_t(std::max(0, num_present)); i < blocks.size(); ++i)
        LA_RETURN_IF_ERROR(kv.write_block(blocks[i], in + int64_t(i) * bpb));
    return {};
}

}  // namespace lazyattn::store
