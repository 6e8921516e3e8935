#include "server/http_server.h"

#include "core/log.h"
#include "core/timer.h"
#include "http/server.h"
#include "server/anthropic_routes.h"
#include "server/completion_routes.h"
#include "server/document_routes.h"
#include "server/http_util.h"
#include "server/native_routes.h"
#include "server/props_routes.h"
#include "server/responses_routes.h"
#include "server/server_context.h"
#include "server/stats_reporter.h"
#include "server/template_routes.h"
#include "server/tokenize_routes.h"
#include "server/unserved_routes.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;
using http::HttpRequest;
using http::HttpResponse;
using http::Lane;

constexpr double kCancelledWriteStallSeconds = 1.0;

// A transport refusal in the API's error shape.
HttpResponse error_response(const http::HttpError& e) {
    HttpResponse res;
    const char* type = e.status == 401  ? "authentication_error"
                       : e.status < 500 ? "invalid_request_error"
                                        : "server_error";
    send_error(res, ApiError{e.status, e.message, type, "", e.code});
    return res;
}

bool is_json_type(std::string type) {
    type = type.substr(0, type.find(';'));
    while (!type.empty() && type.back() == ' ') type.pop_back();
    for (char& c : type) c = char(std::tolower(static_cast<unsigned char>(c)));
    return type == "application/json" || (type.size() > 5 && type.compare(type.size() - 5, 5, "+json") == 0);
}

// A body with no Content-Type is taken as JSON; every Content-Type given must say JSON.
bool declared_json(const HttpRequest& req) {
    for (const auto& [name, value] : req.headers) {
        if (name == "content-type" && !is_json_type(value)) return false;
    }
    return true;
}

// Checks on a request's head, made before its body is read: shutting down, then the API key.
std::optional<http::HttpError> admit_head(ServerContext& ctx, const HttpRequest& req) {
    if (ctx.draining.load() && req.path != "/metrics") {
        return http::HttpError{503, "the server is shutting down", "shutting_down"};
    }
    const bool health = req.path == "/health" || req.path == "/v1/health";
    const bool open =
        (health && !ctx.config.health_needs_key) || (req.path == "/metrics" && !ctx.config.metrics_needs_key);
    if (ctx.api_keys.enabled() && !open && !ctx.api_keys.match(req)) {
        return http::HttpError{401, "a valid API key is required (Authorization: Bearer <key>, or X-Api-Key: <key>)",
                               "invalid_api_key"};
    }
    return std::nullopt;
}

// Checks every whole request passes before its route runs (the head's again: draining may have
// begun while the body arrived).
std::optional<http::HttpError> admit(ServerContext& ctx, const HttpRequest& req) {
    if (auto refusal = admit_head(ctx, req)) return refusal;
    if (!req.body.empty() && !declared_json(req)) {
        return http::HttpError{415, "the request body must be sent as Content-Type: application/json",
                               "unsupported_media_type"};
    }
    return std::nullopt;
}

void handle_health(ServerContext& ctx, HttpResponse& res) {
    const engine::EngineHealth h = ctx.engine.health();
    const bool stalled = h.has_work && h.ms_since_progress > ctx.config.health_stall_s * 1000;
    json body = {{"status", stalled ? "stalled" : "ok"},
                 {"requests_waiting", h.num_waiting},
                 {"requests_running", h.num_running},
                 {"seconds_since_progress", h.ms_since_progress / 1000.0}};
    // A store that is down never fails the check (lookups are computed instead), but shows.
    if (const store::StoreStats st = ctx.engine.stats().store; !st.tiers.empty()) {
        body["kv_store"] = store::store_health(st);
    }
    send_json(res, stalled ? 503 : 200, body);
}

// One access-log line per response: what was asked, the answer, and (for generations) the
// token counts and TTFT the handler attached. Health checks and scrapes log at debug only.
void log_access(const HttpRequest* req, const HttpResponse& res) {
    const bool routine = req != nullptr &&
                         (req->path == "/health" || req->path == "/v1/health" || req->path == "/metrics") &&
                         res.status == 200;
    const log::Level level = routine ? log::Level::kDebug : log::Level::kInfo;
    if (!log::enabled(level)) return;
    if (req == nullptr) {
        log::write(level, "http refused", {{"status", res.status}});
        return;
    }
    const double seconds = (now_ms() - req->arrival_ms) / 1000.0;
    auto field = [&](const char* key) {
        for (const auto& [k, v] : res.log_fields) {
            if (k == key) return v;
        }
        return -1.0;
    };
    if (res.log_fields.empty()) {
        log::write(level, "http request",
                   {{"method", req->method},
                    {"path", req->path},
                    {"status", res.status},
                    {"client", req->remote_addr},
                    {"seconds", seconds}});
        return;
    }
    log::write(level, "http request",
               {{"method", req->method},
                {"path", req->path},
                {"status", res.status},
                {"client", req->remote_addr},
                {"prompt_tokens", field("prompt_tokens")},
                {"cached_tokens", field("cached_tokens")},
                {"generated_tokens", field("generated_tokens")},
                {"ttft_ms", field("ttft_ms")},
                {"seconds", seconds}});
}

// Every name the model answers to: its id, then its aliases.
std::vector<std::string> model_names(const ServerConfig& c) {
    std::vector<std::string> names{c.model_id};
    names.insert(names.end(), c.model_aliases.begin(), c.model_aliases.end());
    return names;
}

http::Router make_router(ServerContext& ctx) {
    http::Router r;
    r.add("POST", "/v1/completions", Lane::kHeavy,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink& l) {
              handle_completion(ctx, q, s, l, false);
          });
    // llama-server also serves the OpenAI routes without /v1 (OpenAI(base_url="http://host:port")
    // calls them so); /completions is its native API there, not OpenAI's.
    for (const char* path : {"/v1/chat/completions", "/chat/completions"}) {
        r.add("POST", path, Lane::kHeavy, [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink& l) {
            handle_completion(ctx, q, s, l, true);
        });
    }
    // OpenAI Responses; llama-server serves it without /v1 too. The kept responses live as long as
    // the routes that use them.
    auto responses = make_response_store();
    for (const char* path : {"/v1/responses", "/responses"}) {
        r.add("POST", path, Lane::kHeavy,
              [&ctx, responses](const HttpRequest& q, HttpResponse& s, const http::ClientLink& l) {
                  handle_responses(ctx, responses, q, s, l);
              });
    }
    r.add("GET", "/v1/responses/{id}", Lane::kLight,
          [&ctx, responses](const HttpRequest& q, HttpResponse& s, const http::ClientLink&) {
              handle_get_response(ctx, *responses, q, s);
          });
    r.add("DELETE", "/v1/responses/{id}", Lane::kLight,
          [&ctx, responses](const HttpRequest& q, HttpResponse& s, const http::ClientLink&) {
              handle_delete_response(ctx, *responses, q, s);
          });
    // Anthropic Messages.
    r.add("POST", "/v1/messages", Lane::kHeavy,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink& l) { handle_messages(ctx, q, s, l); });
    r.add("POST", "/v1/messages/count_tokens", Lane::kHeavy,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink& l) {
              handle_count_tokens(ctx, q, s, l);
          });
    r.add("POST", "/v1/documents", Lane::kHeavy,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink& l) {
              handle_pin_documents(ctx, q, s, l);
          });
    r.add("DELETE", "/v1/documents/{id}", Lane::kHeavy,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink&) { handle_unpin_document(ctx, q, s); });
    r.add("GET", "/v1/documents", Lane::kLight,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink&) { handle_list_documents(ctx, q, s); });
    r.add("POST", "/tokenize", Lane::kHeavy,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink&) { handle_tokenize(ctx, q, s); });
    r.add("POST", "/apply-template", Lane::kHeavy,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink&) { handle_apply_template(ctx, q, s); });
    r.add("POST", "/detokenize", Lane::kHeavy,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink&) { handle_detokenize(ctx, q, s); });
    // llama-server's native API: /completion and /completions (OpenAI's is /v1/completions).
    for (const char* path : {"/completion", "/completions"}) {
        r.add("POST", path, Lane::kHeavy, [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink& l) {
            handle_native_completion(ctx, q, s, l);
        });
    }
    r.add("GET", "/props", Lane::kLight,
          [&ctx](const HttpRequest&, HttpResponse& s, const http::ClientLink&) { handle_props(ctx, s); });
    r.add("GET", "/slots", Lane::kLight,
          [&ctx](const HttpRequest& q, HttpResponse& s, const http::ClientLink&) { handle_slots(ctx, q, s); });
    for (const char* path : {"/v1/models", "/models"}) {
        r.add("GET", path, Lane::kLight, [&ctx](const HttpRequest&, HttpResponse& res, const http::ClientLink&) {
            const json model = {{"id", ctx.config.model_id},
                                {"object", "model"},
                                {"created", ctx.started_unix_s},
                                {"owned_by", "lazyattn"},
                                {"max_model_len", ctx.context_length},  // vLLM's name
                                {"context_length", ctx.context_length},
                                // llama-server's: every --alias name (the id among them), and --tags.
                                {"aliases", model_names(ctx.config)},
                                {"tags", ctx.config.model_tags}};
            send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
        });
    }
    for (const char* path : {"/health", "/v1/health"}) {
        r.add("GET", path, Lane::kLight,
              [&ctx](const HttpRequest&, HttpResponse& res, const http::ClientLink&) { handle_health(ctx, res); });
    }
    r.add("GET", "/metrics", Lane::kLight, [&ctx](const HttpRequest&, HttpResponse& res, const http::ClientLink&) {
        if (!ctx.config.metrics_endpoint) {
            return send_error(res,
                              ApiError{501, "This server does not support metrics endpoint (start it with --metrics)",
                                       "not_supported_error", "", "not_implemented"});
        }
        res.content_type = "text/plain; version=0.0.4";
        // llama-server's: when the counters began (its clients turn totals into rates with it).
        res.set_header("Process-Start-Time-Unix", std::to_string(ctx.started_unix_s));
        res.body = ctx.metrics.render(ctx.engine.stats(), ctx.engine.health());
        ctx.metrics.render_known(res.body, *ctx.builder.known_documents());
    });
    add_unserved_routes(r);
    return r;
}

}  // namespace

HttpServer::HttpServer(const ServerConfig& config, engine::ServingEngine& engine, const tokenizer::Tokenizer& tokenizer,
                       std::optional<tokenizer::ChatTemplate> chat)
    : ctx_(std::make_unique<ServerContext>(config, engine, tokenizer, std::move(chat))) {
    ServerContext& ctx = *ctx_;
    http::ServerOptions o;
    o.host = config.host;
    o.more_hosts = config.more_hosts;
    o.port = config.port;
    o.limits = config.limits;
    o.heavy_threads = config.num_http_threads;
    http::ServerHooks hooks;
    hooks.error_response = error_response;
    hooks.admit_head = [&ctx](const HttpRequest& head) { return admit_head(ctx, head); };
    hooks.admit = [&ctx](const HttpRequest& req, const http::RouteMatch&) { return admit(ctx, req); };
    hooks.on_response = [&ctx](const HttpRequest* req, const HttpResponse& res) {
        ctx.metrics.count_request(req != nullptr ? req->path : "", res.status);
        log_access(req, res);
    };
    http_ = std::make_unique<http::Server>(std::move(o), make_router(ctx), std::move(hooks));
}

HttpServer::~HttpServer() {
    http_->stop();
    stats_.reset();
}

Status HttpServer::start() {
    LA_RETURN_IF_ERROR(http_->start());
    stats_ = std::make_unique<StatsReporter>(ctx_->engine, ctx_->metrics, ctx_->config.stats_interval_s);
    return {};
}

int HttpServer::port() const { return http_->port(); }

KnownDocuments& HttpServer::known_documents() { return *ctx_->builder.known_documents(); }

void HttpServer::drain() {
    ctx_->draining.store(true);
    if (!ctx_->wait_idle(ctx_->config.shutdown_timeout_s)) {
        ctx_->engine.shutdown(true);  // cancels what is left; its streams end with an error event
        // Their last events go to clients that read them at once; one that stopped reading gets
        // a second, not the write timeout, before its connection is dropped.
        http_->cut_write_stall(kCancelledWriteStallSeconds);
        ctx_->wait_idle(kCancelledWriteStallSeconds + 1.0);
    }
    http_->stop();
    stats_.reset();
}

}  // namespace lazyattn::server
