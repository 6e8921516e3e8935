// KvBlockCopy: a pool operation a forward step runs besides storing its rows.
#pragma once

#include <cstdint>
#include <vector>

namespace lazyattn::model {

// Block-attn's materialization of one span: its first num_tokens tokens copied from src_blocks
// to dst_blocks (disjoint lists of ceil(num_tokens / block_size) blocks) in every layer, the keys
// re-rotated by delta = logical_start - stored_base with each layer's RoPE.
struct KvBlockCopy {
    std::vector<int32_t> src_blocks, dst_blocks;
    int32_t num_tokens = 0;
    int32_t delta = 0;
};

}  // namespace lazyattn::model
