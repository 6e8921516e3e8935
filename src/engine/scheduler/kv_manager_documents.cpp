// KvManager: the document registry behind /v1/documents, one per tenant. A document is a segment
// known by a keyed hash of its content under the tenant's seed; pinning holds references on its
// blocks so eviction never takes it. Pins are counted (each pin needs its unpin) and capped: all
// pins together at max_pinned_fraction of the pool, one account's (an API key's, over all its
// cache_salts: engine/tenant.h) at its quota, so requests always keep room to run.
#include <algorithm>
#include <cstdio>

#include "core/timer.h"
#include "engine/request/tenant.h"
#include "engine/scheduler/kv_manager.h"

namespace lazyattn::engine {
namespace {

kv::BlockHash chain_end(const kv::BlockHash& seed, const std::vector<int32_t>& tokens, int32_t block_size) {
    const auto chain = kv::hash_chain(seed, tokens, block_size);
    return chain.empty() ? seed : chain.back();
}

// The id shows a hash of the chain's end, not the end itself (which keys cache lookups).
std::string id_of(const kv::BlockHash& end) {
    const kv::BlockHash h = kv::hash_salt(end, "document-id");
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.high, (unsigned long long)h.low);
    return buf;
}

int32_t blocks_for(int64_t tokens, int32_t block_size) { return int32_t((tokens + block_size - 1) / block_size); }

}  // namespace

std::string KvManager::document_id(const std::string& tenant, const std::vector<int32_t>& tokens) const {
    return id_of(chain_end(seeds_for(tenant).segment, tokens, kv_.block_size()));
}

DocumentInfo KvManager::info(const std::string& id, const DocumentEntry& e) const {
    return {id, int32_t(e.tokens.size()), e.pin_count > 0, e.pin_count, e.last_used_ms};
}

void KvManager::note_documents(const SequenceState& s) {
    // Anchored and neighbour-conditioned documents are cached as other encodings, not under the
    // registry's seed: not listed.
    if (!segments_are_blocks(config_.cache_mode) || s.request.reuse.anchored || s.request.reuse.neighbours > 0) return;
    const auto& segments = s.request.segments;
    for (size_t d = s.request.first_segment_is_preamble ? 1 : 0; d < segments.size(); ++d) {
        if (segments[d].empty()) continue;
        const kv::BlockHash end = chain_end(s.seeds.segment, segments[d], kv_.block_size());
        DocumentEntry& e = documents_[s.request.tenant][id_of(end)];
        if (e.tokens.empty()) {
            e.tokens = segments[d];
            e.chain_end = end;
            ++num_document_entries_;
            ++documents_version_;
        }
        e.last_used_ms = now_ms();
    }
    if (num_document_entries_ > 2 * int64_t(kv_.pool().num_blocks()) + 64) prune_documents();
}

void KvManager::index_documents(const std::string& tenant, std::span<const std::vector<int32_t>> documents) {
    for (const auto& d : documents) neighbours_.add(tenant, d);
}

void KvManager::prune_documents() {
    for (auto t = documents_.begin(); t != documents_.end();) {
        const kv::BlockHash seed = seeds_for(t->first).segment;
        for (auto it = t->second.begin(); it != t->second.end();) {
            if (it->second.pin_count == 0 && !kv_.contains(seed, it->second.tokens)) {
                it = t->second.erase(it);
                --num_document_entries_;
            } else {
                ++it;
            }
        }
        t = t->second.empty() ? documents_.erase(t) : std::next(t);
    }
}

Status KvManager::check_pin_room(const std::string& tenant, int32_t num_new) const {
    const int32_t total = kv_.pool().num_blocks(), pinned = pins_.num_pinned();
    const int32_t cap = int32_t(config_.max_pinned_fraction * total);
    if (pinned + num_new > cap) {
        return resource_exhausted("pinning this document needs " + std::to_string(num_new) + " more KV blocks; " +
                                  std::to_string(pinned) + " of the " + std::to_string(cap) +
                                  " that documents may pin (max_pinned_fraction of a " + std::to_string(total) +
                                  "-block pool) are taken (unpin documents first)");
    }
    // The quota is the account's (the API key's), whatever cache_salt the pins were made under.
    const int32_t quota = config_.max_pinned_blocks_per_tenant;
    const int32_t used = pins_.num_pinned(tenant_account(tenant));
    if (quota > 0 && used + num_new > quota) {
        return resource_exhausted("pinning this document needs " + std::to_string(num_new) + " more KV blocks; " +
                                  std::to_string(used) + " of this API key's quota of " + std::to_string(quota) +
                                  " are taken (unpin documents first)");
    }
    return {};
}

Expected<DocumentInfo> KvManager::pin_document(const std::string& tenant, const std::vector<int32_t>& tokens) {
    if (!segments_are_blocks(config_.cache_mode)) {
        return unsupported(std::string("documents are cached as segments only in the lazy, lazy-k and block-attn "
                                       "cache modes (this engine runs '") +
                           cache_mode_name(config_.cache_mode) + "')");
    }
    if (tokens.empty()) return invalid_argument("empty document");
    const kv::BlockHash seed = seeds_for(tenant).segment;
    const kv::BlockHash end = chain_end(seed, tokens, kv_.block_size());
    const std::string id = id_of(end);
    if (auto t = documents_.find(tenant); t != documents_.end()) {
        if (auto it = t->second.find(id); it != t->second.end() && it->second.pin_count > 0) {
            ++it->second.pin_count;  // its blocks are pinned already
            it->second.last_used_ms = now_ms();
            ++documents_version_;
            return info(id, it->second);
        }
    }
    // Room is checked before "not cached", so a pin that could never be granted is refused
    // before the caller spends a forward pass computing the document.
    auto blocks = kv_.match(seed, tokens, int32_t(tokens.size()));
    const int32_t missing = blocks_for(int64_t(tokens.size()), kv_.block_size()) - int32_t(blocks.size());
    if (Status st = check_pin_room(tenant, pins_.num_new(blocks) + missing); !st.ok()) {
        kv_.release(blocks);
        return st;
    }
    if (missing > 0) {
        kv_.release(blocks);
        return not_found("document " + id + " is not cached (compute it first)");
    }
    DocumentEntry& e = documents_[tenant][id];
    if (e.tokens.empty()) ++num_document_entries_;
    e.tokens = tokens;
    e.chain_end = end;
    e.pinned_blocks = std::move(blocks);
    e.pin_count = 1;
    e.last_used_ms = now_ms();
    ++documents_version_;
    pins_.add(tenant_account(tenant), end, e.pinned_blocks);
    // Pinned documents are kept in the store too (the writer skips entries already there).
    if (store_ != nullptr && !config_.position_aware_segments) {
        store_segment(store_variant(tenant, 0), tokens, e.pinned_blocks);
    }
    return info(id, e);
}

Status KvManager::unpin_document(const std::string& tenant, const std::string& id) {
    auto t = documents_.find(tenant);
    if (t == documents_.end()) return not_found("no pinned document " + id);
    auto it = t->second.find(id);
    if (it == t->second.end() || it->second.pin_count == 0) return not_found("no pinned document " + id);
    DocumentEntry& e = it->second;
    ++documents_version_;
    if (--e.pin_count > 0) return {};
    pins_.remove(tenant_account(tenant), e.chain_end, e.pinned_blocks);
    kv_.release(e.pinned_blocks);
    e.pinned_blocks.clear();
    return {};
}

std::vector<DocumentInfo> KvManager::list_documents(const std::string& tenant) {
    std::vector<DocumentInfo> out;
    auto t = documents_.find(tenant);
    if (t == documents_.end()) return out;
    const kv::BlockHash seed = seeds_for(tenant).segment;
    for (auto it = t->second.begin(); it != t->second.end();) {
        const DocumentEntry& e = it->second;
        if (e.pin_count == 0 && !kv_.contains(seed, e.tokens)) {
            it = t->second.erase(it);  // evicted since
            --num_document_entries_;
            continue;
        }
        out.push_back(info(it->first, e));
        ++it;
    }
    if (t->second.empty()) documents_.erase(t);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used_ms > b.last_used_ms; });
    return out;
}

std::map<std::string, std::vector<DocumentInfo>> KvManager::list_all_documents() {
    std::vector<std::string> tenants;
    for (const auto& [tenant, entries] : documents_) tenants.push_back(tenant);
    std::map<std::string, std::vector<DocumentInfo>> out;
    for (const std::string& t : tenants) {
        if (auto listed = list_documents(t); !listed.empty()) out[t] = std::move(listed);
    }
    return out;
}

std::optional<std::vector<int32_t>> KvManager::document_tokens(const std::string& tenant, const std::string& id) const {
    auto t = documents_.find(tenant);
    if (t == documents_.end()) return std::nullopt;
    auto it = t->second.find(id);
    if (it == t->second.end()) return std::nullopt;
    if (it->second.pin_count == 0 && !kv_.contains(seeds_for(tenant).segment, it->second.tokens)) return std::nullopt;
    return it->second.tokens;
}

}  // namespace lazyattn::engine
