// Run-time settings of the HTTP server (the engine's own live in EngineConfig). Filled once by
// `lazyattn serve` from the command line.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace lazyattn::server {

struct ServerConfig {
    std::string host = "127.0.0.1";
    int32_t port = 8080;               // 0: any free port (HttpServer::port() tells which)
    int64_t max_body_bytes = 8 << 20;  // larger request bodies get 413
    int32_t num_http_threads = 128;    // each streaming response holds one for its duration
    double shutdown_timeout_s = 10;    // SIGTERM: in-flight requests get this long, then cancel
    std::string model_id;              // what /v1/models lists and requests must name

    Status validate() const;
};

}  // namespace lazyattn::server
