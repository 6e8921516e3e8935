// KvCache: the paged KV cache's bookkeeping as the engine sees it: the block pool and the content
// index of cached blocks, kept consistent. The memory itself is the backend's (backend::KvMemory). Blocks handed out by allocate() evict whatever they
// cached (least recently freed first); match() finds the leading blocks of a token list that are
// already cached under a chain seed and takes a reference on each.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_cache.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"
#include "kv/kv_shape.h"

namespace lazyattn::kv {

class KvCache {
public:
    explicit KvCache(const KvShape& shape);
    KvCache(const KvCache&) = delete;
    KvCache& operator=(const KvCache&) = delete;

    const KvShape& shape() const { return shape_; }
    int32_t block_size() const { return shape().block_size; }
    const BlockPool& pool() const { return pool_; }
    const BlockCache& index() const { return index_; }

    Expected<std::vector<BlockId>> allocate(int32_t num_blocks) { return pool_.allocate(num_blocks); }
    void ref(BlockId id) { pool_.ref(id); }
    // Drops one reference on each block, LAST FIRST: callers pass chains in order, so a chain's
    // last blocks reach the free list (and eviction) before its first ones, and a partly evicted
    // chain keeps a reusable prefix (as vLLM frees).
    void release(const std::vector<BlockId>& ids);

    // The cached blocks holding the first tokens of `tokens` (chained from `seed`), in order,
    // each with a new reference. Only blocks lying entirely within the first `max_tokens`
    // tokens match; a final partial block matches when it holds exactly the remaining tokens.
    std::vector<BlockId> match(const BlockHash& seed, std::span<const int32_t> tokens, int32_t max_tokens);
    // After match()'s `num_matched` whole blocks: the cached block whose first rows hold the
    // longest prefix of the tokens that follow, at most `max_tokens` - num_matched * B of them,
    // with a new reference on it (none: block -1, 0 tokens). Those rows are for copying into the
    // caller's own block, never for sharing: the found block may be another request's, still
    // written past them (BlockCache::longest_prefix).
    BlockCache::PrefixHit match_partial(const BlockHash& seed, std::span<const int32_t> tokens, size_t num_matched,
                                        int32_t max_tokens);
    // Whether every block of `tokens` (chained from `seed`, final partial block included) is cached.
    bool contains(const BlockHash& seed, std::span<const int32_t> tokens) const;
    // Indexes computed blocks: block i holds tokens [i*B, (i+1)*B) of `tokens`, chained from
    // `seed`. A final partial block is indexed only when include_partial (segments are immutable
    // and padded; a tail's last block is indexed for match_partial's copies, as match() never
    // shares a tail's last block: its requests' limit stops short of it).
    void publish(const BlockHash& seed, std::span<const int32_t> tokens, std::span<const BlockId> blocks,
                 bool include_partial);

    int32_t num_free() const { return pool_.num_free(); }
    int32_t num_used() const { return pool_.num_used(); }
    // Free blocks that still hold cached content (reusable by a later hit).
    int32_t num_cached_free() const;
    void check_integrity() const;

private:
    BlockPool pool_;
    BlockCache index_;
    KvShape shape_;
};

}  // namespace lazyattn::kv
