#include "engine/documents/document_registry.h"

#include <algorithm>
#include <cstdio>

#include "core/check.h"
#include "core/timer.h"
#include "engine/request/tenant.h"
#include "engine/sequence/sequence_state.h"

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

}  // namespace

DocumentRegistry::DocumentRegistry(kv::KvCache& kv, const EngineConfig& config, SeedOf seed_of, OnPinned on_pinned)
    : kv_(kv),
      config_(config),
      seed_of_(std::move(seed_of)),
      on_pinned_(std::move(on_pinned)),
      pins_(kv.pool().num_blocks()) {}

std::string DocumentRegistry::id(const std::string& tenant, const std::vector<int32_t>& tokens) const {
    return id_of(chain_end(seed_of_(tenant), tokens, kv_.block_size()));
}

DocumentInfo DocumentRegistry::info(const std::string& id, const Entry& e) {
    return {id, int32_t(e.tokens.size()), e.pin_count > 0, e.pin_count, e.last_used_ms, e.conditioned};
}

DocumentRegistry::Entry& DocumentRegistry::entry(const std::string& tenant, const std::vector<int32_t>& tokens) {
    const kv::BlockHash end = chain_end(seed_of_(tenant), tokens, kv_.block_size());
    Entry& e = entries_[tenant][id_of(end)];
    if (e.tokens.empty()) {
        e.tokens = tokens;
        e.chain_end = end;
        ++num_entries_;
        ++version_;
    }
    return e;
}

void DocumentRegistry::note_conditioned(const std::string& tenant, const std::vector<int32_t>& tokens,
                                        ConditionedCopyInfo copy) {
    Entry& e = entry(tenant, tokens);
    copy.cached = true;
    auto same_k = [&](const ConditionedCopyInfo& c) { return c.neighbours == copy.neighbours; };
    e.conditioned.erase(std::remove_if(e.conditioned.begin(), e.conditioned.end(), same_k), e.conditioned.end());
    e.conditioned.push_back(std::move(copy));
    e.last_used_ms = now_ms();
    ++version_;
}

bool DocumentRegistry::still_cached(const kv::BlockHash& seed, Entry& e) const {
    bool any = e.pin_count > 0 || kv_.contains(seed, e.tokens);
    for (ConditionedCopyInfo& c : e.conditioned) {
        c.cached = conditioned_seed_ && kv_.contains(conditioned_seed_(seed, c.key), e.tokens);
        any |= c.cached;
    }
    return any;
}

void DocumentRegistry::note(const SequenceState& s) {
    const RagRequest& r = s.request;
    if (!segments_are_blocks(config_.cache_mode) || r.reuse.anchored) return;
    for (size_t d = 0; d < r.segments.size(); ++d) {
        // A document read as its conditioned copy is another encoding (listed with its plain one).
        if (!r.is_document(d) || r.segments[d].empty() || r.conditioning_neighbours(d) > 0) continue;
        entry(r.tenant, r.segments[d]).last_used_ms = now_ms();
    }
    if (num_entries_ > 2 * int64_t(kv_.pool().num_blocks()) + 64) prune();
}

void DocumentRegistry::prune() {
    for (auto t = entries_.begin(); t != entries_.end();) {
        const kv::BlockHash seed = seed_of_(t->first);
        for (auto it = t->second.begin(); it != t->second.end();) {
            if (!still_cached(seed, it->second)) {
                it = t->second.erase(it);
                --num_entries_;
            } else {
                ++it;
            }
        }
        t = t->second.empty() ? entries_.erase(t) : std::next(t);
    }
}

Status DocumentRegistry::check_pin_room(const std::string& tenant, int32_t num_new) const {
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

Expected<DocumentInfo> DocumentRegistry::pin(const std::string& tenant, const std::vector<int32_t>& tokens) {
    if (!segments_are_blocks(config_.cache_mode)) {
        return unsupported(std::string("documents are cached as segments only in the lazy, lazy-k and block-attn "
                                       "cache modes (this engine runs '") +
                           cache_mode_name(config_.cache_mode) + "')");
    }
    if (tokens.empty()) return invalid_argument("empty document");
    const kv::BlockHash seed = seed_of_(tenant);
    const kv::BlockHash end = chain_end(seed, tokens, kv_.block_size());
    const std::string doc_id = id_of(end);
    if (auto t = entries_.find(tenant); t != entries_.end()) {
        if (auto it = t->second.find(doc_id); it != t->second.end() && it->second.pin_count > 0) {
            ++it->second.pin_count;  // its blocks are pinned already
            it->second.last_used_ms = now_ms();
            ++version_;
            return info(doc_id, it->second);
        }
    }
    // Room is checked before "not cached", so a pin that could never be granted is refused
    // before the caller spends a forward pass computing the document.
    auto blocks = kv_.match(seed, tokens, int32_t(tokens.size()));
    const int32_t missing = kv::blocks_for(int64_t(tokens.size()), kv_.block_size()) - int32_t(blocks.size());
    if (Status st = check_pin_room(tenant, pins_.num_new(blocks) + missing); !st.ok()) {
        kv_.release(blocks);
        return st;
    }
    if (missing > 0) {
        kv_.release(blocks);
        return not_found("document " + doc_id + " is not cached (compute it first)");
    }
    Entry& e = entries_[tenant][doc_id];
    if (e.tokens.empty()) ++num_entries_;
    e.tokens = tokens;
    e.chain_end = end;
    e.pinned_blocks = std::move(blocks);
    e.pin_count = 1;
    e.last_used_ms = now_ms();
    ++version_;
    pins_.add(tenant_account(tenant), end, e.pinned_blocks);
    if (on_pinned_) on_pinned_(tenant, tokens, e.pinned_blocks);
    return info(doc_id, e);
}

Status DocumentRegistry::unpin(const std::string& tenant, const std::string& doc_id) {
    auto t = entries_.find(tenant);
    if (t == entries_.end()) return not_found("no pinned document " + doc_id);
    auto it = t->second.find(doc_id);
    if (it == t->second.end() || it->second.pin_count == 0) return not_found("no pinned document " + doc_id);
    Entry& e = it->second;
    ++version_;
    if (--e.pin_count > 0) return {};
    pins_.remove(tenant_account(tenant), e.chain_end, e.pinned_blocks);
    kv_.release(e.pinned_blocks);
    e.pinned_blocks.clear();
    return {};
}

std::vector<DocumentInfo> DocumentRegistry::list(const std::string& tenant) {
    std::vector<DocumentInfo> out;
    auto t = entries_.find(tenant);
    if (t == entries_.end()) return out;
    const kv::BlockHash seed = seed_of_(tenant);
    for (auto it = t->second.begin(); it != t->second.end();) {
        Entry& e = it->second;
        if (!still_cached(seed, e)) {
            it = t->second.erase(it);  // evicted since
            --num_entries_;
            continue;
        }
        out.push_back(info(it->first, e));
        ++it;
    }
    if (t->second.empty()) entries_.erase(t);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used_ms > b.last_used_ms; });
    return out;
}

std::map<std::string, std::vector<DocumentInfo>> DocumentRegistry::list_all() {
    std::vector<std::string> tenants;
    for (const auto& [tenant, entries] : entries_) tenants.push_back(tenant);
    std::map<std::string, std::vector<DocumentInfo>> out;
    for (const std::string& t : tenants) {
        if (auto listed = list(t); !listed.empty()) out[t] = std::move(listed);
    }
    return out;
}

std::optional<std::vector<int32_t>> DocumentRegistry::tokens(const std::string& tenant,
                                                             const std::string& doc_id) const {
    auto t = entries_.find(tenant);
    if (t == entries_.end()) return std::nullopt;
    auto it = t->second.find(doc_id);
    if (it == t->second.end()) return std::nullopt;
    if (it->second.pin_count == 0 && !kv_.contains(seed_of_(tenant), it->second.tokens)) return std::nullopt;
    return it->second.tokens;
}

void DocumentRegistry::for_each_pinned_block(const std::function<void(kv::BlockId)>& f) const {
    for (const auto& [tenant, docs] : entries_) {
        for (const auto& [doc_id, doc] : docs) {
            LA_CHECK_MSG((doc.pin_count > 0) == !doc.pinned_blocks.empty(), "document %s: %d pins, %zu blocks",
                         doc_id.c_str(), doc.pin_count, doc.pinned_blocks.size());
            for (kv::BlockId b : doc.pinned_blocks) f(b);
        }
    }
}

}  // namespace lazyattn::engine
