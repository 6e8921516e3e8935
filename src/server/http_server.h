// HttpServer: lazyattn's OpenAI-compatible API on the http::Server transport. HTTP workers
// parse, tokenize, detokenize and format; the ServingEngine's one inference thread only runs
// steps. Routes (light ones have workers of their own, so they answer while every heavy worker
// is busy):
//   POST /v1/completions, POST /v1/chat/completions   (completion_routes.h)        heavy
//   POST /v1/documents, DELETE /v1/documents/{id}      (document_routes.h)          heavy
//   POST /tokenize, POST /detokenize                   (tokenize_routes.h)          heavy
//   GET /v1/documents, GET /v1/models, GET /health, GET /metrics                   light
// Before any route: 503 while draining, 401 without a valid API key (when keys are set), 415 for
// a body that is not declared JSON (a browser page cannot send one cross-site without a
// preflight). Shutdown is graceful: drain() turns new requests away with 503, waits for in-flight
// ones up to the configured timeout, then cancels what is left.
#pragma once

#include <memory>
#include <optional>

#include "core/status.h"
#include "engine/serving_engine.h"
#include "server/server_config.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::http {
class Server;
}

namespace lazyattn::server {

struct ServerContext;
class StatsReporter;

class HttpServer {
public:
    // chat == nullopt: the model has no chat template (chat requests get 400).
    HttpServer(const ServerConfig& config, engine::ServingEngine& engine, const tokenizer::Tokenizer& tokenizer,
               std::optional<tokenizer::ChatTemplate> chat);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds the socket and starts serving on threads of its own.
    Status start();
    int port() const;

    // Stops taking new work (503), lets in-flight requests finish within the shutdown timeout,
    // cancels the rest (shutting the engine down), then stops listening. Idempotent.
    void drain();

    // The known-document index requests read (documents_from known), to load a corpus into.
    KnownDocuments& known_documents();

private:
    std::unique_ptr<ServerContext> ctx_;
    std::unique_ptr<http::Server> http_;
    std::unique_ptr<StatsReporter> stats_;
};

}  // namespace lazyattn::server
