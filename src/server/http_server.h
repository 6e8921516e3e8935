// HttpServer: lazyattn's OpenAI-compatible HTTP API over cpp-httplib. A pool of HTTP worker
// threads parses, tokenizes, detokenizes and formats; the ServingEngine's one inference thread
// only runs steps. Routes:
//   POST /v1/completions, POST /v1/chat/completions   (completion_routes.h)
//   POST|GET /v1/documents, DELETE /v1/documents/{id} (document_routes.h)
//   GET /v1/models, GET /health, GET /metrics
// Shutdown is graceful: drain() turns new requests away with 503, waits for in-flight ones up to
// the configured timeout, then cancels what is left.
#pragma once

#include <memory>
#include <optional>
#include <thread>

#include "core/status.h"
#include "engine/serving_engine.h"
#include "server/server_config.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace httplib {
class Server;
}

namespace lazyattn::server {

struct ServerContext;

class HttpServer {
public:
    // chat == nullopt: the model has no chat template (chat requests get 400).
    HttpServer(const ServerConfig& config, engine::ServingEngine& engine, const tokenizer::Tokenizer& tokenizer,
               std::optional<tokenizer::ChatTemplate> chat, int32_t context_length);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds the socket and starts accepting on a thread of its own. Also ignores SIGPIPE for the
    // process (a client that leaves mid-stream must fail a write, not kill the server).
    Status start();
    int port() const { return port_; }

    // Stops taking new work (503), lets in-flight requests finish within the shutdown timeout,
    // cancels the rest (shutting the engine down), then stops listening. Idempotent.
    void drain();

private:
    void add_routes();
    void stop_listening();

    std::unique_ptr<ServerContext> ctx_;
    std::unique_ptr<httplib::Server> http_;
    std::thread listener_;
    int port_ = 0;
};

}  // namespace lazyattn::server
