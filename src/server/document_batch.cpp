#include "server/document_batch.h"

namespace lazyattn::server {
namespace {

std::string document_param(size_t i) { return "documents[" + std::to_string(i) + "]"; }

ApiError pin_error(const Status& st, const std::string& param, bool undone, bool client_left) {
    ApiError e = client_left
                     ? ApiError{499, "the client closed the connection", "server_error", "", "client_disconnected"}
                 : st.code() == StatusCode::kResourceExhausted
                     ? ApiError{429, st.message(), "rate_limit_error", "", "pin_quota_exceeded"}
                     : api_error_from_status(st);
    e.param = param;
    e.message = e.param + ": " + e.message + (undone ? " (the batch's earlier pins were undone)" : "");
    return e;
}

// kComputeOnly: the one precompute path, the whole batch in as few engine requests as the
// context allows (the documents computed before a failure stay cached).
std::optional<ApiError> compute_batch(engine::ServingEngine& engine, std::vector<std::vector<int32_t>> tokens,
                                      const std::string& tenant, const std::function<bool()>& gone,
                                      std::vector<engine::DocumentInfo>& batch) {
    auto report = engine.precompute(tenant, std::move(tokens), {}, gone);
    if (!report.ok()) return pin_error(report.status(), "documents", false, gone());
    batch = std::move(report->documents);
    return std::nullopt;
}

// kKeep: each document pinned in order; a failure unpins the batch's earlier documents.
std::optional<ApiError> pin_batch(engine::ServingEngine& engine, std::vector<std::vector<int32_t>> tokens,
                                  const std::string& tenant, const std::function<bool()>& gone,
                                  std::vector<engine::DocumentInfo>& batch) {
    for (size_t i = 0; i < tokens.size(); ++i) {
        auto info = gone() ? Expected<engine::DocumentInfo>(Status{StatusCode::kCancelled, "the client left"})
                           : engine.pin_document(tenant, std::move(tokens[i]), gone);
        if (!info.ok()) {
            const bool undo = !batch.empty();
            for (const engine::DocumentInfo& d : batch) (void)engine.unpin_document(tenant, d.id);
            return pin_error(info.status(), document_param(i), undo, gone());
        }
        batch.push_back(std::move(info).value());
    }
    return std::nullopt;
}

}  // namespace

std::optional<ApiError> pin_document_batch(const RequestBuilder& builder, engine::ServingEngine& engine,
                                           const std::vector<DocumentRef>& docs, const std::string& tenant,
                                           std::vector<engine::DocumentInfo>& pinned, PinMode mode,
                                           const std::function<bool()>& client_gone) {
    const int64_t most = engine.max_document_tokens();
    std::vector<std::vector<int32_t>> tokens(docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
        const std::string param = document_param(i);
        if (!builder.may_fit_context(docs[i].text.size() + docs[i].title.size())) {
            return invalid_request(param + " is longer than the context length allows", param,
                                   "context_length_exceeded");
        }
        tokens[i] = builder.document_tokens(docs[i]);
        if (int64_t(tokens[i].size()) > most) {
            return invalid_request(param + " has " + std::to_string(tokens[i].size()) + " tokens; a document holds " +
                                       std::to_string(most) + " at most (the context length is " +
                                       std::to_string(engine.context_length()) + ")",
                                   param, "context_length_exceeded");
        }
    }
    const auto gone = [&client_gone] { return client_gone && client_gone(); };
    std::vector<engine::DocumentInfo> batch;
    auto error = mode == PinMode::kComputeOnly ? compute_batch(engine, std::move(tokens), tenant, gone, batch)
                                               : pin_batch(engine, std::move(tokens), tenant, gone, batch);
    if (error) return error;
    // Known from here on (documents_from known finds them in flat prompts), pinned or not: only
    // once the whole batch was accepted, so a refused one indexes nothing.
    builder.note_known(docs, tenant);
    pinned.insert(pinned.end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
    return std::nullopt;
}

}  // namespace lazyattn::server
