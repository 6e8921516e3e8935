#include "kv/block_hash.h"

#include <xxhash.h>

#include <algorithm>

namespace lazyattn::kv {
namespace {

BlockHash from_xxh(XXH128_hash_t h) { return {h.low64, h.high64}; }

}  // namespace

BlockHash hash_seed(std::string_view kind, std::string_view model_fingerprint, uint64_t key) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_128bits_reset_withSeed(st, key);
    const uint64_t kind_len = kind.size();
    XXH3_128bits_update(st, &kind_len, sizeof kind_len);
    XXH3_128bits_update(st, kind.data(), kind.size());
    XXH3_128bits_update(st, model_fingerprint.data(), model_fingerprint.size());
    const BlockHash h = from_xxh(XXH3_128bits_digest(st));
    XXH3_freeState(st);
    return h;
}

BlockHash hash_salt(const BlockHash& seed, std::string_view salt) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, &seed, sizeof seed);
    XXH3_128bits_update(st, "salt", 4);  // never the input of a hash_block (its length word comes first)
    const uint64_t n = salt.size();
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, salt.data(), salt.size());
    const BlockHash h = from_xxh(XXH3_128bits_digest(st));
    XXH3_freeState(st);
    return h;
}

BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> tokens) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, &parent, sizeof parent);
    const uint64_t n = tokens.size();
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, tokens.data(), tokens.size_bytes());
    const BlockHash h = from_xxh(XXH3_128bits_digest(st));
    XXH3_freeState(st);
    return h;
}

BlockHash hash_segment_list(const BlockHash& seed, const std::vector<std::vector<int32_t>>& segments) {
    BlockHash h = hash_block(seed, std::span<const int32_t>());
    for (const auto& seg : segments) h = hash_block(h, seg);  // hash_block includes the length
    return h;
}

std::vector<BlockHash> hash_chain(const BlockHash& seed, std::span<const int32_t> tokens, int32_t block_size) {
    std::vector<BlockHash> out;
    BlockHash h = seed;
    for (size_t begin = 0; begin < tokens.size(); begin += block_size) {
        const size_t n = std::min<size_t>(block_size, tokens.size() - begin);
        h = hash_block(h, tokens.subspan(begin, n));
        out.push_back(h);
    }
    return out;
}

}  // namespace lazyattn::kv
