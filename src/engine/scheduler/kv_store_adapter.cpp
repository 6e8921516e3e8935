// KvStoreAdapter: the persistent segment store as the KV manager uses it (kv_store_adapter.h).
#include "engine/scheduler/kv_store_adapter.h"

#include <algorithm>
#include <cstdio>

#include "core/log.h"

namespace lazyattn::engine {

KvStoreAdapter::KvStoreAdapter(const EngineConfig& config, backend::KvMemory& kv_memory)
    : config_(config), kv_memory_(kv_memory) {}

Status KvStoreAdapter::open(const store::Fingerprint& fingerprint, double fingerprint_ms, int32_t context_length) {
    if (config_.kv_stores.empty()) return {};
    if (!segments_are_blocks(config_.cache_mode)) {
        log::warn("--kv-store is unused: documents are segments only in the lazy, lazy-k and block-attn modes",
                  {{"cache_mode", cache_mode_name(config_.cache_mode)}});
        return {};
    }
    fingerprint_ = fingerprint;
    // No entry this engine writes or reads is larger than a segment of the whole context (or the
    // whole pool): a reply past that is garbage (or not ours), cut there rather than read whole.
    store::TierOptions tier = config_.kv_store_tier;
    tier.max_entry_bytes = std::min(tier.max_entry_bytes, store::segment_max_bytes(kv_memory_.shape(), context_length));
    LA_ASSIGN_OR_RETURN(store_, store::SegmentStore::open(config_.kv_stores, config_.kv_store_writer, tier,
                                                          config_.kv_store_unreachable));
    char fp[33];
    std::snprintf(fp, sizeof fp, "%016llx%016llx", (unsigned long long)fingerprint_.high,
                  (unsigned long long)fingerprint_.low);
    log::info("KV store opened", {{"tiers", int(store_->num_tiers())},
                                  {"unreachable", int(store_->unreachable_at_open().size())},
                                  {"model_fingerprint", fp},
                                  {"fingerprint_ms", fingerprint_ms}});
    return {};
}

bool KvStoreAdapter::storable(const RagRequest& r, size_t d) const {
    return store_ != nullptr && segments_are_blocks(config_.cache_mode) && !config_.position_aware_segments &&
           r.anchor_tokens(d) == 0;
}

uint64_t KvStoreAdapter::variant(const std::string& tenant, const ConditioningKey& conditioning) const {
    return store::segment_variant(keys_stored_rotated(config_.cache_mode), tenant, conditioning.name());
}

std::string KvStoreAdapter::key(const std::string& tenant, const std::vector<int32_t>& tokens,
                                const ConditioningKey& conditioning) const {
    return store::segment_key(
        store::segment_meta(fingerprint_, variant(tenant, conditioning), kv_memory_.shape(), tokens));
}

bool KvStoreAdapter::contains(const std::string& tenant, const std::vector<int32_t>& tokens,
                              const ConditioningKey& conditioning) const {
    return store_ != nullptr && store_->contains(key(tenant, tokens, conditioning));
}

bool KvStoreAdapter::load(const RagRequest& r, size_t d, const std::vector<kv::BlockId>& blocks, int32_t num_present) {
    if (!storable(r, d)) return false;
    const store::SegmentMeta meta =
        store::segment_meta(fingerprint_, variant(r.tenant, r.conditioning_key(d)), kv_memory_.shape(), r.segments[d]);
    return store_->load(meta, kv_memory_, blocks, num_present) >= 0;
}

void KvStoreAdapter::write(uint64_t variant, const std::vector<int32_t>& tokens,
                           const std::vector<kv::BlockId>& blocks) {
    if (store_ == nullptr) return;
    store_->write_async(store::segment_meta(fingerprint_, variant, kv_memory_.shape(), tokens), kv_memory_, blocks);
}

void KvStoreAdapter::write_pinned(const std::string& tenant, const std::vector<int32_t>& tokens,
                                  const std::vector<kv::BlockId>& blocks) {
    if (!config_.position_aware_segments) write(variant(tenant, {}), tokens, blocks);
}

}  // namespace lazyattn::engine
