#include "server/document_routes.h"

#include <chrono>

#include "core/timer.h"
#include "server/http_util.h"
#include "server/openai_request.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxPinBatch = 256;  // documents one POST may pin (each may be a long prefill)

// A pin the engine refuses for room (the pinned share of the pool, or the tenant's quota, is
// used up) is a 429 the client may retry after unpinning; other failures map as usual.
ApiError pin_error(const Status& st) {
    if (st.code() == StatusCode::kResourceExhausted)
        return {429, st.message(), "rate_limit_error", "", "pin_quota_exceeded"};
    return api_error_from_status(st);
}

// DocumentInfo's steady-clock milliseconds as unix seconds.
int64_t unix_seconds(double steady_ms) {
    const double now_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return int64_t(now_unix - (now_ms() - steady_ms) / 1000.0);
}

std::optional<ApiError> parse_pin_body(const http::HttpRequest& req, std::vector<DocumentRef>& docs,
                                       std::string& cache_salt) {
    json body;
    if (auto e = parse_json_body(req, body, JsonBounds{int64_t(kMaxPinBatch)})) return e;
    if (!body.is_object()) return invalid_request("the request body must be a JSON object", "", "invalid_type");
    if (!body.contains("documents")) {
        return invalid_request("'documents' is required", "documents", "missing_required_parameter");
    }
    if (auto e = parse_documents(body.at("documents"), false, docs)) return e;
    if (docs.empty()) return invalid_request("'documents' must not be empty", "documents", "invalid_value");
    if (docs.size() > kMaxPinBatch) {
        return invalid_request("at most " + std::to_string(kMaxPinBatch) + " documents per request", "documents",
                               "invalid_value");
    }
    return parse_cache_salt(body, cache_salt);
}

}  // namespace

void handle_pin_documents(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    ActiveRequest active(ctx);
    std::vector<DocumentRef> docs;
    std::string salt;
    if (auto e = parse_pin_body(req, docs, salt)) return send_error(res, *e);
    const std::string tenant = ctx.tenant(req, salt);
    // Every document is checked and tokenized before the first pin, and a pin that fails undoes
    // the batch's earlier ones: a batch pins all its documents or none.
    std::vector<std::vector<int32_t>> tokens(docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
        const std::string param = "documents[" + std::to_string(i) + "]";
        if (!ctx.builder.may_fit_context(docs[i].text.size() + docs[i].title.size())) {
            return send_error(res, invalid_request(param + " is longer than the context length allows", param,
                                                   "context_length_exceeded"));
        }
        tokens[i] = ctx.builder.document_tokens(docs[i]);
        if (int64_t(tokens[i].size()) >= ctx.context_length) {
            return send_error(
                res, invalid_request(param + " has " + std::to_string(tokens[i].size()) +
                                         " tokens; the context length is " + std::to_string(ctx.context_length),
                                     param, "context_length_exceeded"));
        }
    }
    // Known from here on (documents_from known finds them in flat prompts), pinned or not.
    ctx.builder.note_known(docs, tenant);
    std::vector<std::string> pinned;
    json data = json::array();
    for (size_t i = 0; i < docs.size(); ++i) {
        const std::string param = "documents[" + std::to_string(i) + "]";
        auto info = ctx.engine.pin_document(tenant, std::move(tokens[i]));
        if (!info.ok()) {
            for (const std::string& id : pinned) (void)ctx.engine.unpin_document(tenant, id);
            ApiError e = pin_error(info.status());
            e.message = param + ": " + e.message + (pinned.empty() ? "" : " (the batch's earlier pins were undone)");
            e.param = param;
            return send_error(res, e);
        }
        pinned.push_back(info->id);
        data.push_back({{"id", info->id},
                        {"object", "document"},
                        {"tokens", info->num_tokens},
                        {"pinned", true},
                        {"pin_count", info->pin_count}});
    }
    send_json(res, 200, {{"object", "list"}, {"data", data}});
}

void handle_list_documents(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    const std::string salt = req.query_param("cache_salt");
    if (auto e = check_cache_salt(salt)) return send_error(res, *e);
    json data = json::array();
    for (const engine::DocumentInfo& d : ctx.engine.list_documents(ctx.tenant(req, salt))) {
        data.push_back({{"id", d.id},
                        {"object", "document"},
                        {"tokens", d.num_tokens},
                        {"pinned", d.pinned},
                        {"pin_count", d.pin_count},
                        {"last_used", unix_seconds(d.last_used_ms)}});
    }
    send_json(res, 200, {{"object", "list"}, {"data", data}});
}

void handle_unpin_document(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    ActiveRequest active(ctx);
    const std::string id = req.path_params.empty() ? "" : req.path_params[0];
    const std::string salt = req.query_param("cache_salt");
    if (auto e = check_cache_salt(salt)) return send_error(res, *e);
    const Status st = ctx.engine.unpin_document(ctx.tenant(req, salt), id);
    if (!st.ok()) {
        ApiError e = api_error_from_status(st);
        e.param = "id";
        return send_error(res, e);
    }
    send_json(res, 200, {{"id", id}, {"object", "document"}, {"deleted", true}});
}

}  // namespace lazyattn::server
