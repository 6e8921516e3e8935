// BlockCache: which pool blocks hold which content. An entry maps a block hash (see
// block_hash.h) to the block holding it and remembers the block's token ids, so a hit is
// verified against the tokens, never trusted by hash alone. Entries outlive their users: a
// cached block whose references drop to zero stays cached on the pool's free list until the
// pool hands it out again, which calls forget() first (least recently freed goes first).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace lazyattn::kv {

class BlockCache {
public:
    explicit BlockCache(int32_t num_blocks) : by_block_(num_blocks) {}

    // The block holding exactly `tokens` under `hash`, if cached (hash and tokens both match).
    std::optional<BlockId> lookup(const BlockHash& hash, std::span<const int32_t> tokens) const;
    // Records that `block` now holds `tokens` under `hash`. A hash already cached elsewhere
    // keeps its first block (the new block simply stays uncached).
    void insert(const BlockHash& hash, BlockId block, std::span<const int32_t> tokens);
    // Drops whatever `block` was caching (the pool is about to overwrite it).
    void forget(BlockId block);

    bool is_cached(BlockId block) const { return by_block_[block].has_value(); }
    int32_t num_cached() const { return int32_t(by_hash_.size()); }
    void clear();
    void check_integrity() const;

private:
    struct Entry {
        BlockHash hash;
        std::vector<int32_t> tokens;
    };
    std::unordered_map<BlockHash, BlockId, BlockHashHasher> by_hash_;
    std::vector<std::optional<Entry>> by_block_;
};

}  // namespace lazyattn::kv
