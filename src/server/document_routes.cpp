#include "server/document_routes.h"

#include <chrono>

#include "core/timer.h"
#include "server/document_batch.h"
#include "server/http_util.h"
#include "server/openai_request.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxPinBatch = 256;         // documents one POST may pin (each may be a long prefill)
constexpr size_t kMaxDocumentIdBytes = 128;  // far above any id the registry makes

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

void handle_pin_documents(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                          const http::ClientLink& link) {
    ActiveRequest active(ctx);
    std::vector<DocumentRef> docs;
    std::string salt;
    if (auto e = parse_pin_body(req, docs, salt)) return send_error(res, *e);
    std::vector<engine::DocumentInfo> pinned;
    // A client that leaves cancels the batch (the document being computed too) and undoes its
    // pins, as a completion whose client leaves is cancelled: nobody would ever unpin them.
    if (auto e = pin_document_batch(ctx.builder, ctx.engine, docs, ctx.tenant(req, salt), pinned, PinMode::kKeep,
                                    [&link] { return link.gone(); })) {
        if (e->code == "client_disconnected") ctx.metrics.count_disconnect();
        return send_error(res, *e);
    }
    json data = json::array();
    for (const engine::DocumentInfo& info : pinned) {
        data.push_back({{"id", info.id},
                        {"object", "document"},
                        {"tokens", info.num_tokens},
                        {"pinned", true},
                        {"pin_count", info.pin_count}});
    }
    send_json(res, 200, {{"object", "list"}, {"data", data}});
}

void handle_list_documents(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    const std::string salt = req.query_param("cache_salt");
    if (auto e = check_cache_salt(salt)) return send_error(res, *e);
    json data = json::array();
    for (const engine::DocumentInfo& d : ctx.engine.list_documents(ctx.tenant(req, salt))) {
        // Its conditioned copies made in the background, with what each was encoded after.
        json conditioned = json::array();
        for (const engine::ConditionedCopyInfo& c : d.conditioned) {
            conditioned.push_back({{"neighbours", c.neighbours},
                                   {"neighbour_ids", c.neighbour_ids},
                                   {"prefix_tokens", c.prefix_tokens},
                                   {"cached", c.cached},
                                   {"stored", c.stored}});
        }
        data.push_back({{"id", d.id},
                        {"object", "document"},
                        {"tokens", d.num_tokens},
                        {"pinned", d.pinned},
                        {"pin_count", d.pin_count},
                        {"last_used", unix_seconds(d.last_used_ms)},
                        {"conditioned_copies", conditioned}});
    }
    send_json(res, 200, {{"object", "list"}, {"data", data}});
}

void handle_unpin_document(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    ActiveRequest active(ctx);
    const std::string id = req.path_params.empty() ? "" : req.path_params[0];
    const std::string salt = req.query_param("cache_salt");
    if (auto e = check_cache_salt(salt)) return send_error(res, *e);
    // Ids are short hashes: a longer one is no document's, and is answered without quoting it whole.
    const Status st = id.size() > kMaxDocumentIdBytes ? not_found("no pinned document")
                                                      : ctx.engine.unpin_document(ctx.tenant(req, salt), id);
    if (!st.ok()) {
        ApiError e = api_error_from_status(st);
        e.param = "id";
        if (st.code() == StatusCode::kNotFound) e.message = "no pinned document '" + clip_for_message(id) + "'";
        return send_error(res, e);
    }
    send_json(res, 200, {{"id", id}, {"object", "document"}, {"deleted", true}});
}

}  // namespace lazyattn::server
