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

void BlockCache::insert(const BlockHash& parent, const BlockHash& hash, BlockId block,
                        std::span<const int32_t> tokens) {
    LA_CHECK(block >= 0 && block < int32_t(by_block_.size()));
    if (by_hash_.count(hash)) return;
    forget(block);
    by_hash_[hash] = block;
    by_parent_.emplace(parent, block);
    by_block_[block] = Entry{parent, hash, std::vector<int32_t>(tokens.begin(), tokens.end())};
}

BlockCache::PrefixHit BlockCache::longest_prefix(const BlockHash& parent, std::span<const int32_t> tokens) const {
    PrefixHit best;
    auto [it, end] = by_parent_.equal_range(parent);
    for (int32_t compared = 0; it != end && compared < kMaxPrefixCandidates; ++it, ++compared) {
        const std::vector<int32_t>& held = by_block_[it->second]->tokens;
        const size_t n = std::min(held.size(), tokens.size());
        const auto same = std::mismatch(held.begin(), held.begin() + ptrdiff_t(n), tokens.begin()).first - held.begin();
        if (int32_t(same) > best.num_tokens) best = {it->second, int32_t(same)};
    }
    return best;
}

void BlockCache::forget(BlockId block) {
    auto& entry = by_block_[block];
    if (!entry) return;
    by_hash_.erase(entry->hash);
    for (auto [it, end] = by_parent_.equal_range(entry->parent); it != end; ++it) {
        if (it->second == block) {
            by_parent_.erase(it);
            break;
        }
    }
    entry.reset();
}

void BlockCache::clear() {
    by_hash_.clear();
    by_parent_.clear();
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
    LA_CHECK_MSG(by_parent_.size() == by_hash_.size(), "cache index holds %zu parents for %zu hashes",
                 by_parent_.size(), by_hash_.size());
    for (const auto& [parent, b] : by_parent_) {
        LA_CHECK_MSG(by_block_[b] && by_block_[b]->parent == parent, "block %d is listed under another parent", b);
    }
}

}  // namespace lazyattn::kv
