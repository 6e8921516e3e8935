#include "kv/block_cache.h"

#include <algorithm>

#include "core/check.h"

namespace lazyattn::kv {

std::optional<BlockId> BlockCache::lookup(const BlockHash& hash, std::span<const int32_t> tokens) const {
    auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) return std::nullopt;
    const auto& entry = by_block_[it->second];
    if (!entry || !std::equal(tokens.begin(), tokens.end(), entry->tokens.begin(), entry->tokens.end())) {
        return std::nullopt;  // a hash collision: treat as a miss
    }
    return it->second;
}

void BlockCache::insert(const BlockHash& hash, BlockId block, std::span<const int32_t> tokens) {
    LA_CHECK(block >= 0 && block < int32_t(by_block_.size()));
    if (by_hash_.count(hash)) return;
    forget(block);
    by_hash_[hash] = block;
    by_block_[block] = Entry{hash, std::vector<int32_t>(tokens.begin(), tokens.end())};
}

void BlockCache::forget(BlockId block) {
    auto& entry = by_block_[block];
    if (!entry) return;
    by_hash_.erase(entry->hash);
    entry.reset();
}

void BlockCache::clear() {
    by_hash_.clear();
    for (auto& e : by_block_) e.reset();
}

void BlockCache::check_integrity() const {
    int32_t with_entry = 0;
    for (BlockId b = 0; b < int32_t(by_block_.size()); ++b) {
        if (!by_block_[b]) continue;
        ++with_entry;
        auto it = by_hash_.find(by_block_[b]->hash);
        LA_CHECK_MSG(it != by_hash_.end() && it->second == b, "block %d's cache entry is not indexed", b);
    }
    LA_CHECK_MSG(with_entry == int32_t(by_hash_.size()), "cache index holds %zu hashes for %d blocks", by_hash_.size(),
                 with_entry);
}

}  // namespace lazyattn::kv
