// Content hashes of KV blocks (XXH3-128). A block's hash chains its parent's hash with its own
// token ids, so equal hashes mean equal token histories from the chain's seed. Seeds say what the
// history is relative to: a segment's chain is seeded by the model and the KV variant alone
// (never by what precedes the segment), so a document hits wherever it sits; a tail's chain is
// seeded by the whole segment list; a prefix-cache chain by the model alone. Every seed is keyed
// with a secret (random per process in a server), so nobody outside can compute a block's hash
// and steer two histories onto one; salts (a tenant) split one seed into disjoint caches.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace lazyattn::kv {

struct BlockHash {
    uint64_t low = 0;
    uint64_t high = 0;
    bool operator==(const BlockHash&) const = default;
};

struct BlockHashHasher {
    size_t operator()(const BlockHash& h) const { return size_t(h.low ^ (h.high * 0x9e3779b97f4a7c15ull)); }
};

// Hash of a label, a model fingerprint and a secret key: the root of every chain of one kind.
BlockHash hash_seed(std::string_view kind, std::string_view model_fingerprint, uint64_t key);
// A seed split by a salt: chains under hash_salt(seed, a) and hash_salt(seed, b) never meet.
BlockHash hash_salt(const BlockHash& seed, std::string_view salt);
// The next link: parent chained with a block's tokens (a partial last block hashes only its
// true tokens, so [a b] and [a b c] differ).
BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> tokens);
// The seed of a tail's chain: the segment list as a tuple of tuples (lengths included, so
// [8 tokens] and [4, 4] differ).
BlockHash hash_segment_list(const BlockHash& seed, const std::vector<std::vector<int32_t>>& segments);
// Hashes of every block of `tokens` split into blocks of `block_size`, chained from `seed`.
std::vector<BlockHash> hash_chain(const BlockHash& seed, std::span<const int32_t> tokens, int32_t block_size);

}  // namespace lazyattn::kv
