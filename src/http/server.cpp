#include "http/server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/timer.h"
#include "http/socket_io.h"

namespace lazyattn::http {
namespace {

constexpr double kLingerSeconds = 2;            // how long a refused client may keep sending before we close
constexpr int kPollMs = 200;                    // deadline granularity of the event loop
constexpr double kStopWriteStallSeconds = 0.5;  // once stopping, a write that makes no progress

double now_s() { return now_ms() / 1000.0; }

// HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 only when asked.
bool client_keeps_alive(const HttpRequest& r) {
    std::string v = r.header("connection");
    for (char& ch : v) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (v.find("close") != std::string::npos) return false;
    return r.version_minor >= 1 || v.find("keep-alive") != std::string::npos;
}

std::string response_head(const HttpResponse& res, const char* framing, bool keep_alive) {
    std::string head = "HTTP/1.1 " + std::to_string(res.status) + " " + reason_phrase(res.status) + "\r\n";
    if (!res.content_type.empty()) head += "Content-Type: " + res.content_type + "\r\n";
    head += framing;
    head += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    for (const auto& [name, value] : res.headers) head += name + ": " + value + "\r\n";
    head += "\r\n";
    return head;
}

}  // namespace

struct Server::Connection {
    Connection(Server& server, int fd, std::string addr, bool hold_body)
        : server(server), fd(fd), addr(std::move(addr)), parser(server.options_.limits, hold_body) {}
    ~Connection() {
        close(fd);
        std::lock_guard<std::mutex> lock(server.mu_);
        --server.num_open_;
        if (--server.per_client_[addr] <= 0) server.per_client_.erase(addr);
    }

    Server& server;
    const int fd;
    const std::string addr;
    std::string in;  // read, not yet parsed (a pipelined request's bytes wait here)
    RequestParser parser;
    double idle_deadline = 0;     // between requests
    double head_deadline = 0;     // the current request's headers
    double request_deadline = 0;  // the current request's body
    double linger_deadline = 0;
    double request_start_ms = 0;  // when the current request's first byte arrived
    bool continue_sent = false;
    int32_t served = 0;
};

// Whether the client of a request that is still being worked on has left. A FIN alone does not
// say: a client may half-close its sending side after the request and still read the answer
// (RFC 9112 9.6). So on a FIN the link writes an interim "100 Continue" (every HTTP/1.1 client
// must skip an unexpected 1xx; it is only ever sent before the response head): a client that
// closed for good answers it with a reset, one that only half-closed reads on. HTTP/1.0 allows
// no 1xx, so there a FIN means gone.
class Server::Link final : public ClientLink {
public:
    Link(int fd, bool interim_allowed) : fd_(fd), interim_allowed_(interim_allowed) {}
    bool gone() const override {
        switch (peer_state(fd_)) {
            case PeerState::kOpen:
                return false;
            case PeerState::kReset:
                return true;
            case PeerState::kEndOfInput:
                break;
        }
        if (!interim_allowed_) return true;
        if (!probed_) {
            probed_ = true;
            return !write_all(fd_, "HTTP/1.1 100 Continue\r\n\r\n", 1.0);
        }
        return false;  // probed: a reset would have shown as kReset
    }

private:
    int fd_;
    bool interim_allowed_;
    mutable bool probed_ = false;
};

class Server::Sink final : public ChunkSink {
public:
    Sink(int fd, bool chunked, const std::atomic<double>& stall_s) : fd_(fd), chunked_(chunked), stall_s_(stall_s) {}
    bool write(std::string_view data) override {
        if (failed_ || data.empty()) return !failed_;
        if (chunked_) {
            char size[24];
            std::snprintf(size, sizeof size, "%zx\r\n", data.size());
            std::string framed = size;
            framed.append(data);
            framed += "\r\n";
            failed_ = !write_all(fd_, framed, stall_s_);
        } else {
            failed_ = !write_all(fd_, data, stall_s_);
        }
        return !failed_;
    }
    bool failed() const { return failed_; }
    void fail() { failed_ = true; }

private:
    int fd_;
    bool chunked_;
    const std::atomic<double>& stall_s_;
    bool failed_ = false;
};

Server::Server(ServerOptions options, Router router, ServerHooks hooks)
    : options_(std::move(options)),
      router_(std::move(router)),
      hooks_(std::move(hooks)),
      write_stall_s_(options_.limits.write_timeout_s) {}

Server::~Server() { stop(); }

Status Server::start() {
    auto fd = listen_on(options_.host, options_.port, &port_);
    if (!fd.ok()) return fd.status();
    listen_fds_.push_back(*fd);
    for (const std::string& host : options_.more_hosts) {
        int bound = 0;
        auto more = listen_on(host, port_, &bound);
        if (!more.ok()) {
            for (int f : listen_fds_) ::close(f);
            listen_fds_.clear();
            return more.status();
        }
        listen_fds_.push_back(*more);
    }
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    heavy_ = std::make_unique<WorkerPool>(options_.heavy_threads);
    light_ = std::make_unique<WorkerPool>(options_.light_threads);
    loop_ = std::thread([this] { event_loop(); });
    return {};
}

void Server::cut_write_stall(double seconds) {
    if (seconds < write_stall_s_.load()) write_stall_s_.store(seconds);
}

void Server::stop() {
    if (stopping_.exchange(true)) return;
    cut_write_stall(kStopWriteStallSeconds);  // a client that reads nothing cannot hold the exit
    wake();
    if (loop_.joinable()) loop_.join();
    // Running handlers finish their responses; queued ones are dropped (their sockets close).
    if (heavy_) heavy_->stop();
    if (light_) light_->stop();
    // Destroyed outside mu_: a connection's destructor takes mu_ to update the counts (destroying
    // them under the lock deadlocked SIGTERM under load).
    std::vector<ConnPtr> returned;
    {
        std::lock_guard<std::mutex> lock(mu_);
        returned.swap(returned_);
    }
    returned.clear();
    if (wake_fd_ >= 0) ::close(wake_fd_);
    wake_fd_ = -1;
}

int32_t Server::open_connections() const {
    std::lock_guard<std::mutex> lock(mu_);
    return num_open_;
}

void Server::wake() {
    if (wake_fd_ < 0) return;
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void Server::event_loop() {
    std::vector<pollfd> fds;
    std::vector<ConnPtr> polled;
    double accept_paused_until = 0;
    while (!stopping_.load()) {
        std::vector<ConnPtr> back;
        {
            std::lock_guard<std::mutex> lock(mu_);
            back.swap(returned_);
        }
        for (const ConnPtr& c : back) {
            reading_[c->fd] = c;
            advance(c);  // a pipelined request may be waiting in the buffer already
        }
        fds.clear();
        polled.clear();
        const bool accepting = now_s() >= accept_paused_until;
        fds.push_back({wake_fd_, POLLIN, 0});
        for (int listen_fd : listen_fds_) fds.push_back({accepting ? listen_fd : -1, POLLIN, 0});
        const size_t first_conn = fds.size();
        for (const auto& [fd, c] : reading_) {
            fds.push_back({fd, POLLIN, 0});
            polled.push_back(c);
        }
        for (const auto& [fd, c] : lingering_) {
            fds.push_back({fd, POLLIN, 0});
            polled.push_back(c);
        }
        if (poll(fds.data(), nfds_t(fds.size()), kPollMs) < 0 && errno != EINTR) break;
        if (fds[0].revents & POLLIN) {
            uint64_t v;
            [[maybe_unused]] ssize_t n = ::read(wake_fd_, &v, sizeof v);
        }
        for (size_t l = 0; l < listen_fds_.size(); ++l) {
            if (!(fds[1 + l].revents & POLLIN)) continue;
            accept_new(listen_fds_[l]);
            if (errno == EMFILE || errno == ENFILE) accept_paused_until = now_s() + 0.1;
        }
        for (size_t i = 0; i < polled.size(); ++i) {
            if (fds[first_conn + i].revents == 0) continue;
            const ConnPtr& c = polled[i];
            if (auto it = lingering_.find(c->fd); it != lingering_.end() && it->second == c) {
                char sink[4096];
                const ssize_t n = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) lingering_.erase(c->fd);
            } else if (auto r = reading_.find(c->fd); r != reading_.end() && r->second == c) {
                on_readable(c);
            }
        }
        check_deadlines(now_s());
    }
    for (int listen_fd : listen_fds_) ::close(listen_fd);
    reading_.clear();
    lingering_.clear();
}

void Server::accept_new(int listen_fd) {
    const HttpLimits& lim = options_.limits;
    for (int i = 0; i < 64; ++i) {
        errno = 0;
        const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        set_nonblocking(fd);
        const std::string addr = peer_address(fd);
        std::optional<HttpError> refusal;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (num_open_ >= lim.max_connections) {
                refusal = HttpError{503, "the server has too many open connections", "too_many_connections"};
            } else if (per_client_[addr] >= lim.max_connections_per_client) {
                refusal = HttpError{429,
                                    "too many open connections from " + addr + " (at most " +
                                        std::to_string(lim.max_connections_per_client) + ")",
                                    "too_many_connections"};
            } else {
                ++num_open_;
                ++per_client_[addr];
            }
            if (refusal && per_client_[addr] == 0) per_client_.erase(addr);
        }
        if (refusal) {
            HttpResponse res = hooks_.error_response(*refusal);
            write_some(
                fd, response_head(res, ("Content-Length: " + std::to_string(res.body.size()) + "\r\n").c_str(), false) +
                        res.body);
            if (hooks_.on_response) hooks_.on_response(nullptr, res);
            ::close(fd);
            continue;
        }
        auto c = std::make_shared<Connection>(*this, fd, addr, bool(hooks_.admit_head));
        c->idle_deadline = now_s() + lim.header_timeout_s;
        reading_[fd] = std::move(c);
    }
}

void Server::on_readable(const ConnPtr& c) {
    char buf[64 << 10];
    for (int i = 0; i < 4; ++i) {  // bounded: one connection cannot monopolise the loop
        const ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            c->in.append(buf, size_t(n));
            if (size_t(n) < sizeof buf) break;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
        reading_.erase(c->fd);  // closed or reset by the client
        return;
    }
    advance(c);
}

void Server::advance(const ConnPtr& c) {
    const bool was_started = c->parser.started();
    RequestParser::State st = c->parser.feed(c->in);
    if (!was_started && c->parser.started()) {
        const double now = now_s();
        c->request_start_ms = now * 1000.0;
        c->head_deadline = now + options_.limits.header_timeout_s;
        c->request_deadline = now + options_.limits.request_timeout_s;
    }
    if (c->parser.holding_body()) {
        // The head is whole: it is admitted (the API key) before a byte of the body is read,
        // buffered or decompressed.
        if (auto refusal = hooks_.admit_head(c->parser.head())) {
            refuse(c, *refusal, nullptr);
            return;
        }
        st = c->parser.release_body(c->in);
    }
    if (st == RequestParser::State::kComplete) {
        reading_.erase(c->fd);
        HttpRequest request = c->parser.take();
        request.remote_addr = c->addr;
        request.arrival_ms = c->request_start_ms;
        c->continue_sent = false;
        dispatch(c, std::move(request));
    } else if (st == RequestParser::State::kError) {
        refuse(c, c->parser.error(), nullptr);
    } else if (c->parser.wants_continue() && !c->continue_sent) {
        write_some(c->fd, "HTTP/1.1 100 Continue\r\n\r\n");
        c->continue_sent = true;
    }
}

void Server::check_deadlines(double now) {
    std::vector<ConnPtr> idle, slow_head, slow_body;
    for (const auto& [fd, c] : reading_) {
        if (!c->parser.started()) {
            if (now > c->idle_deadline) idle.push_back(c);
        } else if (c->parser.state() == RequestParser::State::kHead && now > c->head_deadline) {
            slow_head.push_back(c);
        } else if (now > c->request_deadline) {
            slow_body.push_back(c);
        }
    }
    for (const ConnPtr& c : idle) reading_.erase(c->fd);
    for (const ConnPtr& c : slow_head) {
        refuse(c, {408, "the request headers did not arrive within the header timeout", "request_timeout"}, nullptr);
    }
    for (const ConnPtr& c : slow_body) {
        refuse(c, {408, "the request did not arrive within the request timeout", "request_timeout"}, nullptr);
    }
    for (auto it = lingering_.begin(); it != lingering_.end();) {
        it = now > it->second->linger_deadline ? lingering_.erase(it) : std::next(it);
    }
}

void Server::refuse(const ConnPtr& c, const HttpError& error, const HttpRequest* request) {
    HttpResponse res = hooks_.error_response(error);
    write_some(
        c->fd,
        response_head(res, ("Content-Length: " + std::to_string(res.body.size()) + "\r\n").c_str(), false) + res.body);
    if (hooks_.on_response) hooks_.on_response(request, res);
    linger(c);
}

void Server::linger(const ConnPtr& c) {
    // Closing with unread bytes would reset the connection and could destroy the refusal before
    // the client reads it; half-close and drain for a moment instead.
    reading_.erase(c->fd);
    shutdown(c->fd, SHUT_WR);
    c->linger_deadline = now_s() + kLingerSeconds;
    lingering_[c->fd] = c;
}

void Server::dispatch(const ConnPtr& c, HttpRequest request) {
    // HEAD is GET without the body (RFC 9110 9.3.2).
    RouteMatch match = router_.match(request.method == "HEAD" ? "GET" : request.method, request.path);
    WorkerPool& pool = match.route != nullptr && match.route->lane == Lane::kHeavy ? *heavy_ : *light_;
    auto job = [this, c, request = std::make_shared<HttpRequest>(std::move(request)), match]() mutable {
        serve(c, *request, match);
    };
    pool.post(std::move(job));  // refused only while stopping: the connection then just closes
}

void Server::serve(const ConnPtr& c, HttpRequest& request, const RouteMatch& match) {
    HttpResponse res;
    request.path_params = match.params;
    try {
        std::optional<HttpError> refusal;
        if (match.route == nullptr) {
            refusal = match.status == 405 ? HttpError{405, "method not allowed", "method_not_allowed"}
                                          : HttpError{404, "no such route", "not_found"};
        } else if (hooks_.admit) {
            refusal = hooks_.admit(request, match);
        }
        if (refusal) {
            res = hooks_.error_response(*refusal);
        } else {
            Link link(c->fd, request.version_minor >= 1);
            match.route->handler(request, res, link);
        }
    } catch (...) {
        res = hooks_.error_response({500, "internal server error", "internal_error"});
    }
    ++c->served;
    const bool keep_alive =
        client_keeps_alive(request) && c->served < options_.limits.max_requests_per_connection && !stopping_.load();
    const bool reusable = write_response(*c, request, res, keep_alive);
    if (hooks_.on_response) hooks_.on_response(&request, res);
    if (reusable) give_back(c);
}

bool Server::write_response(Connection& c, const HttpRequest& request, HttpResponse& res, bool keep_alive) {
    const std::atomic<double>& stall = write_stall_s_;
    const bool head_only = request.method == "HEAD";
    if (!res.stream || head_only) {
        std::string out =
            response_head(res, ("Content-Length: " + std::to_string(res.body.size()) + "\r\n").c_str(), keep_alive);
        if (!head_only) out += res.body;
        return write_all(c.fd, out, stall) && keep_alive && !res.stream;
    }
    // HTTP/1.0 has no chunked coding: the body then ends when the connection does.
    const bool chunked = request.version_minor >= 1;
    keep_alive = keep_alive && chunked;
    if (!write_all(c.fd, response_head(res, chunked ? "Transfer-Encoding: chunked\r\n" : "", keep_alive), stall)) {
        return false;
    }
    Sink sink(c.fd, chunked, stall);
    try {
        res.stream(sink);
    } catch (...) {
        sink.fail();
    }
    if (sink.failed() || !chunked) return false;
    return write_all(c.fd, "0\r\n\r\n", stall) && keep_alive;
}

void Server::give_back(const ConnPtr& c) {
    c->idle_deadline = now_s() + options_.limits.keep_alive_timeout_s;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_.load()) return;  // the connection closes with its last reference
        returned_.push_back(c);
    }
    wake();
}

}  // namespace lazyattn::http
