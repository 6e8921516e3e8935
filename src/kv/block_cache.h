// BlockCache: which pool blocks hold which content. An entry maps a block hash (see
// block_hash.h) to the block holding it and remembers the block's token ids, so a hit is
// verified against the tokens, never trusted by hash alone. Entries outlive their users: a
// cached block whose references drop to zero stays cached on the pool's free list until the
// pool hands it out again, which calls forget() first (least recently freed goes first).
// Entries are also found by their chain's previous hash (their parent), for a prompt that shares
// only the start of a cached block (longest_prefix).
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
    // Records that `block` now holds `tokens` under `hash` = hash_block(parent, tokens). A hash
    // already cached elsewhere keeps its first block (the new block simply stays uncached).
    void insert(const BlockHash& parent, const BlockHash& hash, BlockId block, std::span<const int32_t> tokens);

    // A cached block whose first tokens are a prefix of `tokens` (a block of the chain whose
    // previous hash is `parent`): the one holding the most (block -1, 0 tokens: none holds even
    // the first). At most kMaxPrefixCandidates blocks of one parent are compared, so a prefix
    // with many cached continuations costs a bounded look-up.
    struct PrefixHit {
        BlockId block = -1;
        int32_t num_tokens = 0;
    };
    static constexpr int32_t kMaxPrefixCandidates = 64;
    PrefixHit longest_prefix(const BlockHash& parent, std::span<const int32_t> tokens) const;
    // Drops whatever `block` was caching (the pool is about to overwrite it).
    void forget(BlockId block);

    bool is_cached(BlockId block) const { return by_block_[block].has_value(); }
    int32_t num_cached() const { return int32_t(by_hash_.size()); }
    void clear();
    void check_integrity() const;

private:
    struct Entry {
        BlockHash parent;
        BlockHash hash;
        std::vector<int32_t> tokens;
    };
    std::unordered_map<BlockHash, BlockId, BlockHashHasher> by_hash_;
    std::unordered_multimap<BlockHash, BlockId, BlockHashHasher> by_parent_;
    std::vector<std::optional<Entry>> by_block_;
};

}  // namespace lazyattn::kv
