// ServerContext: what every route shares — the configuration, the engine, the serving front
// (request preparation, shared with the Python extension), the metrics, and the two facts graceful shutdown needs: whether the server is draining (new
// work gets 503) and how many requests are still being answered (a streaming one until its last
// byte is written, which ActiveRequest tracks).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "engine/serving_engine.h"
#include "http/http_message.h"
#include "server/api_keys.h"
#include "server/metrics.h"
#include "server/request_builder.h"
#include "server/server_config.h"
#include "server/serving_front.h"

namespace lazyattn::server {

struct ServerContext {
    ServerContext(const ServerConfig& config, engine::ServingEngine& engine, const tokenizer::Tokenizer& tokenizer,
                  std::optional<tokenizer::ChatTemplate> chat);

    // Blocks until no request is being answered or the timeout passes; true when idle.
    bool wait_idle(double timeout_s);

    // The cache namespace of a request (its API key's, refined by its cache_salt).
    std::string tenant(const http::HttpRequest& request, const std::string& cache_salt) const {
        return api_keys.tenant(request, cache_salt);
    }

    const ServerConfig config;
    const ApiKeys api_keys;
    engine::ServingEngine& engine;
    const tokenizer::Tokenizer& tokenizer;
    const ServingFront front;
    const RequestBuilder& builder;  // the front's
    // The most tokens one request holds (the front's: the engine's context, or --ctx-size/--parallel).
    const int32_t context_length;
    const int64_t started_unix_s;
    Metrics metrics;
    std::atomic<bool> draining{false};

    std::mutex active_mu;
    std::condition_variable active_cv;
    int64_t active = 0;
};

// Counts one request as in progress for its lifetime (held by a stream until its end).
class ActiveRequest {
public:
    explicit ActiveRequest(ServerContext& ctx);
    ~ActiveRequest();
    ActiveRequest(const ActiveRequest&) = delete;
    ActiveRequest& operator=(const ActiveRequest&) = delete;

private:
    ServerContext& ctx_;
};

}  // namespace lazyattn::server
