#include "kv/kv_cache.h"

#include <algorithm>

#include "core/check.h"

namespace lazyattn::kv {

KvCache::KvCache(const KvShape& shape) : pool_(shape.num_blocks), index_(shape.num_blocks), shape_(shape) {
    pool_.set_reuse_listener([this](BlockId id) { index_.forget(id); });
}

void KvCache::release(const std::vector<BlockId>& ids) {
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) pool_.unref(*it);
}

std::vector<BlockId> KvCache::match(const BlockHash& seed, std::span<const int32_t> tokens, int32_t max_tokens) {
    const int32_t bs = block_size();
    const int32_t limit = std::min<int32_t>(max_tokens, int32_t(tokens.size()));
    std::vector<BlockId> hits;
    BlockHash h = seed;
    for (int32_t begin = 0; begin < limit; begin += bs) {
        const int32_t n = std::min(bs, int32_t(tokens.size()) - begin);
        if (begin + n > limit) break;
        const auto block_tokens = tokens.subspan(begin, n);
        h = hash_block(h, block_tokens);
        const auto hit = index_.lookup(h, block_tokens);
        if (!hit) break;
        pool_.ref(*hit);
        hits.push_back(*hit);
    }
    return hits;
}

BlockCache::PrefixHit KvCache::match_partial(const BlockHash& seed, std::span<const int32_t> tokens, size_t num_matched,
                                             int32_t max_tokens) {
    const int32_t bs = block_size();
    const int64_t begin = int64_t(num_matched) * bs;
    const int64_t limit = std::min<int64_t>(max_tokens, int64_t(tokens.size()));
    if (begin >= limit) return {};
    BlockHash parent = seed;
    for (size_t i = 0; i < num_matched; ++i) parent = hash_block(parent, tokens.subspan(size_t(i) * bs, size_t(bs)));
    const BlockCache::PrefixHit hit =
        index_.longest_prefix(parent, tokens.subspan(size_t(begin), size_t(std::min<int64_t>(bs, limit - begin))));
    if (hit.num_tokens > 0) pool_.ref(hit.block);
    return hit;
}

bool KvCache::contains(const BlockHash& seed, std::span<const int32_t> tokens) const {
    const int32_t bs = block_size();
    BlockHash h = seed;
    for (size_t begin = 0; begin < tokens.size(); begin += bs) {
        const auto block_tokens = tokens.subspan(begin, std::min<size_t>(bs, tokens.size() - begin));
        h = hash_block(h, block_tokens);
        if (!index_.lookup(h, block_tokens)) return false;
    }
    return true;
}

void KvCache::publish(const BlockHash& seed, std::span<const int32_t> tokens, std::span<const BlockId> blocks,
                      bool include_partial) {
    const int32_t bs = block_size();
    BlockHash h = seed;
    for (size_t i = 0; i < blocks.size() && int64_t(i) * bs < int64_t(tokens.size()); ++i) {
        const int32_t begin = int32_t(i) * bs;
        const int32_t n = std::min(bs, int32_t(tokens.size()) - begin);
        if (n < bs && !include_partial) break;
        const auto block_tokens = tokens.subspan(begin, n);
        const BlockHash parent = h;
        h = hash_block(h, block_tokens);
        index_.insert(parent, h, blocks[i], block_tokens);
    }
}

int32_t KvCache::num_cached_free() const {
    int32_t n = 0;
    for (BlockId b = 0; b < pool_.num_blocks(); ++b) n += pool_.ref_count(b) == 0 && index_.is_cached(b);
    return n;
}

void KvCache::check_integrity() const {
    pool_.check_integrity();
    index_.check_integrity();
}

}  // namespace lazyattn::kv
