// Scheduler: the document registry behind /v1/documents. A document is a segment known by its
// content hash; pinning holds references on its blocks so eviction never takes it.
#include <algorithm>
#include <cstdio>

#include "core/timer.h"
#include "engine/scheduler.h"

namespace lazyattn::engine {

std::string Scheduler::document_id(const std::vector<int32_t>& tokens) const {
    const auto chain = kv::hash_chain(segment_seed_, tokens, kv_.block_size());
    const kv::BlockHash h = chain.empty() ? segment_seed_ : chain.back();
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.high, (unsigned long long)h.low);
    return buf;
}

void Scheduler::note_document(const std::vector<int32_t>& tokens) {
    if (tokens.empty() || !segments_are_blocks(config_.cache_mode)) return;
    DocumentEntry& e = documents_[document_id(tokens)];
    if (e.tokens.empty()) e.tokens = tokens;
    e.last_used_ms = now_ms();
}

Expected<DocumentInfo> Scheduler::pin_document(const std::vector<int32_t>& tokens) {
    if (!segments_are_blocks(config_.cache_mode)) {
        return unsupported(std::string("documents are cached as segments only in the lazy, lazy-k and block-attn "
                                       "cache modes (this engine runs '") + cache_mode_name(config_.cache_mode) + "')");
    }
    if (tokens.empty()) return invalid_argument("empty document");
    const std::string id = document_id(tokens);
    DocumentEntry& e = documents_[id];
    if (e.tokens.empty()) e.tokens = tokens;
    if (e.pinned_blocks.empty()) {
        auto blocks = kv_.match(segment_seed_, tokens, int32_t(tokens.size()));
        if (int64_t(blocks.size()) * kv_.block_size() < int64_t(tokens.size())) {
            kv_.release(blocks);
            return not_found("document " + id + " is not cached (compute it first)");
        }
        e.pinned_blocks = std::move(blocks);
    }
    e.last_used_ms = now_ms();
    return DocumentInfo{id, int32_t(tokens.size()), true, e.last_used_ms};
}

Status Scheduler::unpin_document(const std::string& id) {
    auto it = documents_.find(id);
    if (it == documents_.end() || it->second.pinned_blocks.empty()) return not_found("no pinned document " + id);
    kv_.release(it->second.pinned_blocks);
    it->second.pinned_blocks.clear();
    return {};
}

std::vector<DocumentInfo> Scheduler::list_documents() {
    std::vector<DocumentInfo> out;
    for (auto it = documents_.begin(); it != documents_.end();) {
        const DocumentEntry& e = it->second;
        const bool pinned = !e.pinned_blocks.empty();
        if (!pinned && !kv_.contains(segment_seed_, e.tokens)) {
            it = documents_.erase(it);  // evicted since
            continue;
        }
        out.push_back({it->first, int32_t(e.tokens.size()), pinned, e.last_used_ms});
        ++it;
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used_ms > b.last_used_ms; });
    return out;
}

std::optional<std::vector<int32_t>> Scheduler::document_tokens(const std::string& id) const {
    auto it = documents_.find(id);
    if (it == documents_.end()) return std::nullopt;
    if (it->second.pinned_blocks.empty() && !kv_.contains(segment_seed_, it->second.tokens)) return std::nullopt;
    return it->second.tokens;
}

}  // namespace lazyattn::engine
