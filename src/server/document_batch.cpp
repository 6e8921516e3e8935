#include "server/document_batch.h"

namespace lazyattn::server {
namespace {

std::string document_param(size_t i) { return "documents[" + std::to_string(i) + "]"; }

ApiError pin_error(const Status& st, size_t i, bool undone, bool client_left) {
    ApiError e = client_left
                     ? ApiError{499, "the client closed the connection", "server_error", "", "client_disconnected"}
                 : st.code() == StatusCode::kResourceExhausted
                     ? ApiError{429, st.message(), "rate_limit_error", "", "pin_quota_exceeded"}
                     : api_error_from_status(st);
    e.param = document_param(i);
    e.message = e.param + ": " + e.message + (undone ? " (the batch's earlier pins were undone)" : "");
    return e;
}

}  // namespace

std::optional<ApiError> pin_document_batch(const RequestBuilder& builder, engine::ServingEngine& engine,
                                           const std::vector<DocumentRef>& docs, const std::string& tenant,
                                           std::vector<engine::DocumentInfo>& pinned, PinMode mode,
                                           const std::function<bool()>& client_gone) {
    const int64_t context = engine.context_length();
    std::vector<std::vector<int32_t>> tokens(docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
        const std::string param = document_param(i);
        if (!builder.may_fit_context(docs[i].text.size() + docs[i].title.size())) {
            return invalid_request(param + " is longer than the context length allows", param,
                                   "context_length_exceeded");
        }
        tokens[i] = builder.document_tokens(docs[i]);
        if (int64_t(tokens[i].size()) >= context) {
            return invalid_request(param + " has " + std::to_string(tokens[i].size()) +
                                       " tokens; the context length is " + std::to_string(context),
                                   param, "context_length_exceeded");
        }
    }
    const auto gone = [&client_gone] { return client_gone && client_gone(); };
    std::vector<engine::DocumentInfo> batch;
    for (size_t i = 0; i < docs.size(); ++i) {
        auto info = gone() ? Expected<engine::DocumentInfo>(Status{StatusCode::kCancelled, "the client left"})
                           : engine.pin_document(tenant, std::move(tokens[i]), gone);
        if (!info.ok()) {
            const bool undo = mode == PinMode::kKeep && !batch.empty();
            if (undo) {
                for (const engine::DocumentInfo& d : batch) (void)engine.unpin_document(tenant, d.id);
            }
            return pin_error(info.status(), i, undo, gone());
        }
        if (mode == PinMode::kComputeOnly) {
            (void)engine.unpin_document(tenant, info->id);
            info->pinned = --info->pin_count > 0;
        }
        batch.push_back(std::move(info).value());
    }
    // Known from here on (documents_from known finds them in flat prompts), pinned or not: only
    // once the whole batch was accepted, so a refused one indexes nothing.
    builder.note_known(docs, tenant);
    pinned.insert(pinned.end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
    return std::nullopt;
}

}  // namespace lazyattn::server
