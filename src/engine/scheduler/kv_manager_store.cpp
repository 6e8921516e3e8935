// KvManager: the persistent segment store (--kv-store). A document's KV depends only on the
// model, the KV variant and its tokens, so a segment missing from the RAM pool is looked up in
// the store's tiers before it is computed, and a computed one is handed to the store's writer
// thread. Plain documents qualify, and neighbour-conditioned ones (one copy per document and
// number of neighbours, its own variant): an anchored document's KV depends on its preamble,
// and the position-keyed baseline's on its slot.
#include <cstdio>

#include "core/log.h"
#include "core/timer.h"
#include "engine/scheduler/kv_manager.h"

namespace lazyattn::engine {

Status KvManager::open_store(double fingerprint_ms, int32_t context_length) {
    if (config_.kv_stores.empty()) return {};
    if (!segments_are_blocks(config_.cache_mode)) {
        log::warn("--kv-store is unused: documents are segments only in the lazy, lazy-k and block-attn modes",
                  {{"cache_mode", cache_mode_name(config_.cache_mode)}});
        return {};
    }
    // No entry this engine writes or reads is larger than a segment of the whole context (or the
    // whole pool): a reply past that is garbage (or not ours), cut there rather than read whole.
    store::TierOptions tier = config_.kv_store_tier;
    tier.max_entry_bytes = std::min(tier.max_entry_bytes, store::segment_max_bytes(kv_.shape(), context_length));
    LA_ASSIGN_OR_RETURN(store_, store::SegmentStore::open(config_.kv_stores, config_.kv_store_writer, tier));
    char fp[33];
    std::snprintf(fp, sizeof fp, "%016llx%016llx", (unsigned long long)fingerprint_.high,
                  (unsigned long long)fingerprint_.low);
    log::info(
        "KV store opened",
        {{"tiers", int(config_.kv_stores.size())}, {"model_fingerprint", fp}, {"fingerprint_ms", fingerprint_ms}});
    return {};
}

bool KvManager::segment_storable(const SequenceState& s, size_t d) const {
    return segments_are_blocks(config_.cache_mode) && !config_.position_aware_segments &&
           s.request.anchor_tokens(d) == 0;
}

bool KvManager::load_segment(SequenceState& s, size_t d, int32_t num_present) {
    if (store_ == nullptr || !segment_storable(s, d)) return false;
    const auto& tokens = s.request.segments[d];
    const store::SegmentMeta meta = store::segment_meta(
        fingerprint_, store_variant(s.request.tenant, s.request.conditioning_neighbours(d)), kv_.shape(), tokens);
    const auto& blocks = s.kv.segments[d].blocks;
    if (store_->load(meta, kv_memory(), blocks, num_present) < 0) return false;
    kv_.publish(segment_seed(s, d), tokens, blocks, true);
    return true;
}

uint64_t KvManager::store_variant(const std::string& tenant, int32_t neighbours) const {
    return store::segment_variant(keys_stored_rotated(config_.cache_mode), tenant, neighbours);
}

std::string KvManager::store_key(const std::string& tenant, const std::vector<int32_t>& tokens,
                                 int32_t neighbours) const {
    return store::segment_key(
        store::segment_meta(fingerprint_, store_variant(tenant, neighbours), kv_.shape(), tokens));
}

void KvManager::store_segment(uint64_t variant, const std::vector<int32_t>& tokens,
                              const std::vector<kv::BlockId>& blocks) {
    if (store_ == nullptr) return;
    store_->write_async(store::segment_meta(fingerprint_, variant, kv_.shape(), tokens), kv_memory(), blocks);
}

}  // namespace lazyattn::engine
