// http::Server: the HTTP/1.1 transport under lazyattn's API. One event-loop thread accepts
// connections and reads requests for all of them (non-blocking, each within HttpLimits' size
// caps and deadlines), so a slow or idle client costs a socket and a buffer, never a thread.
// Only a request that arrived whole is handed to a worker: routes on the light lane (health,
// metrics) have workers of their own, so they answer while every heavy worker streams. After
// the response the connection returns to the event loop (keep-alive; pipelined bytes already
// read are kept). Connections are capped in all and per client address.
//
// Transport refusals (malformed or oversized requests, timeouts, connection caps, unknown routes)
// are rendered by the application's error hook, so every error has the API's one shape.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "http/http_limits.h"
#include "http/request_parser.h"
#include "http/router.h"
#include "http/worker_pool.h"

namespace lazyattn::http {

struct ServerOptions {
    std::string host = "127.0.0.1";
    // Further addresses listened on, on the same port (llama-server's --host a,b); with port 0,
    // the port the first address got.
    std::vector<std::string> more_hosts;
    int port = 8080;  // 0: any free port
    HttpLimits limits;
    int heavy_threads = 128;  // concurrent generations (each stream holds one)
    int light_threads = 4;
};

struct ServerHooks {
    // The response for a refusal made before or instead of a handler.
    std::function<HttpResponse(const HttpError&)> error_response;
    // Runs on the event loop as soon as a request's head is whole, before its body is read; a
    // returned error answers the request and the body is never buffered or decoded (so a client
    // without a valid API key cannot make the server hold megabytes).
    std::function<std::optional<HttpError>(const HttpRequest& head)> admit_head;
    // Runs before the route's handler (on its worker); a returned error answers the request.
    std::function<std::optional<HttpError>(const HttpRequest&, const RouteMatch&)> admit;
    // Every response, after it was written; request null for refusals made before a request
    // was whole. Used for metrics and the access log.
    std::function<void(const HttpRequest* request, const HttpResponse& response)> on_response;
};

class Server {
public:
    Server(ServerOptions options, Router router, ServerHooks hooks);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    Status start();
    int port() const { return port_; }
    // Closes the listener and every connection between requests, lets running handlers finish
    // their responses, and joins every thread. Idempotent.
    void stop();
    // From now on a write that makes no progress for `seconds` fails (never longer than the
    // configured write timeout): graceful shutdown calls it once its deadline passed, so a client
    // that stops reading cannot hold the exit.
    void cut_write_stall(double seconds);

    int32_t open_connections() const;

private:
    struct Connection;
    class Link;
    class Sink;
    using ConnPtr = std::shared_ptr<Connection>;

    void event_loop();
    void accept_new(int listen_fd);
    void on_readable(const ConnPtr& c);
    void advance(const ConnPtr& c);
    void check_deadlines(double now);
    void refuse(const ConnPtr& c, const HttpError& error, const HttpRequest* request);
    void dispatch(const ConnPtr& c, HttpRequest request);
    void serve(const ConnPtr& c, HttpRequest& request, const RouteMatch& match);
    bool write_response(Connection& c, const HttpRequest& request, HttpResponse& response, bool keep_alive);
    void give_back(const ConnPtr& c);
    void linger(const ConnPtr& c);
    void wake();

    const ServerOptions options_;
    const Router router_;
    const ServerHooks hooks_;
    std::vector<int> listen_fds_;  // one per address, the first's first
    int wake_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<double> write_stall_s_;  // limits.write_timeout_s, or less once shutting down
    std::thread loop_;
    std::unique_ptr<WorkerPool> heavy_, light_;

    // Owned by the event loop thread.
    std::map<int, ConnPtr> reading_;    // between requests or reading one
    std::map<int, ConnPtr> lingering_;  // refused: draining the client's bytes before closing

    // Shared with the workers.
    mutable std::mutex mu_;
    std::vector<ConnPtr> returned_;              // keep-alive connections back from workers
    std::map<std::string, int32_t> per_client_;  // open connections per address
    int32_t num_open_ = 0;
};

}  // namespace lazyattn::http
