#include "server/http_server.h"

#include <httplib.h>

#include <csignal>

#include "server/completion_routes.h"
#include "server/document_routes.h"
#include "server/http_util.h"
#include "server/server_context.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

// A body for httplib's own refusals (unknown route, oversized body, unparsable request).
ApiError default_error(int status, const ServerConfig& config) {
    switch (status) {
        case 404: return {404, "no such route", "invalid_request_error", "", "not_found"};
        case 405: return {405, "method not allowed", "invalid_request_error", "", "method_not_allowed"};
        case 413:
            return {413, "the request body is larger than " + std::to_string(config.max_body_bytes) + " bytes",
                    "invalid_request_error", "", "request_too_large"};
        case 414: return {414, "the request URI is too long", "invalid_request_error", "", "uri_too_long"};
        default:
            if (status < 500) return {status, "bad request", "invalid_request_error", "", ""};
            return {status, "internal server error", "server_error", "", "internal_error"};
    }
}

}  // namespace

HttpServer::HttpServer(const ServerConfig& config, engine::ServingEngine& engine, const tokenizer::Tokenizer& tokenizer,
                       std::optional<tokenizer::ChatTemplate> chat, int32_t context_length)
    : ctx_(std::make_unique<ServerContext>(config, engine, tokenizer, std::move(chat), context_length)),
      http_(std::make_unique<httplib::Server>()) {
    const size_t threads = size_t(config.num_http_threads);
    http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http_->set_payload_max_length(size_t(config.max_body_bytes));
    http_->set_keep_alive_max_count(1000);
    // An idle keep-alive connection holds a worker thread, and stop() waits for it to time out.
    http_->set_keep_alive_timeout(2);
    http_->set_read_timeout(30, 0);
    http_->set_write_timeout(30, 0);
    http_->set_tcp_nodelay(true);
    add_routes();
}

HttpServer::~HttpServer() { stop_listening(); }

void HttpServer::add_routes() {
    ServerContext& ctx = *ctx_;
    http_->set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
        if (!ctx.draining.load() || req.path == "/metrics") return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, {503, "the server is shutting down", "server_error", "", "shutting_down"});
        return httplib::Server::HandlerResponse::Handled;
    });
    http_->set_error_handler(
        httplib::Server::HandlerWithResponse([&ctx](const httplib::Request&, httplib::Response& res) {
            if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
            send_error(res, default_error(res.status, ctx.config));
            return httplib::Server::HandlerResponse::Handled;
        }));
    http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        send_error(res, {500, "internal server error", "server_error", "", "internal_error"});
    });
    http_->set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
        ctx.metrics.count_request(req.path, res.status);
    });
    http_->Post("/v1/completions",
                [&ctx](const httplib::Request& q, httplib::Response& r) { handle_completion(ctx, q, r, false); });
    http_->Post("/v1/chat/completions",
                [&ctx](const httplib::Request& q, httplib::Response& r) { handle_completion(ctx, q, r, true); });
    http_->Post("/v1/documents",
                [&ctx](const httplib::Request& q, httplib::Response& r) { handle_pin_documents(ctx, q, r); });
    http_->Get("/v1/documents",
               [&ctx](const httplib::Request& q, httplib::Response& r) { handle_list_documents(ctx, q, r); });
    http_->Delete(R"(/v1/documents/([^/]+))",
                  [&ctx](const httplib::Request& q, httplib::Response& r) { handle_unpin_document(ctx, q, r); });
    http_->Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
        const json model = {{"id", ctx.config.model_id},
                            {"object", "model"},
                            {"created", ctx.started_unix_s},
                            {"owned_by", "lazyattn"},
                            {"context_length", ctx.context_length}};
        send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
    });
    http_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, {{"status", "ok"}});
    });
    http_->Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
        res.set_content(ctx.metrics.render(ctx.engine.stats()), "text/plain; version=0.0.4");
    });
}

Status HttpServer::start() {
    std::signal(SIGPIPE, SIG_IGN);
    const ServerConfig& c = ctx_->config;
    if (c.port == 0) {
        port_ = http_->bind_to_any_port(c.host);
        if (port_ <= 0) return io_error("cannot listen on " + c.host + " (any port)");
    } else {
        if (!http_->bind_to_port(c.host, c.port)) {
            return io_error("cannot listen on " + c.host + ":" + std::to_string(c.port) +
                            " (in use, or a bad address?)");
        }
        port_ = c.port;
    }
    listener_ = std::thread([this] { http_->listen_after_bind(); });
    return {};
}

void HttpServer::drain() {
    ctx_->draining.store(true);
    if (!ctx_->wait_idle(ctx_->config.shutdown_timeout_s)) {
        ctx_->engine.shutdown(true);  // cancels what is left; its streams end with an error event
        ctx_->wait_idle(5.0);
    }
    stop_listening();
}

void HttpServer::stop_listening() {
    if (http_) http_->stop();
    if (listener_.joinable()) listener_.join();
}

}  // namespace lazyattn::server
