#include "store/redis_node.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace lazyattn::store {
namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(1000);
constexpr auto kMaxBackoff = std::chrono::milliseconds(30000);
constexpr timeval kConnectTimeout{0, 300 * 1000};

// hiredis sends with write(2): on a socket whose peer is gone, or that abort_writes() shut down,
// that raises SIGPIPE, which would end the process. Blocked for the call; one raised is consumed.
class NoSigpipe {
public:
    NoSigpipe() {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    }
    ~NoSigpipe() {
        sigset_t pending;
        sigemptyset(&pending);
        if (!sigismember(&old_, SIGPIPE) && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
            const timespec zero{0, 0};
            sigtimedwait(&pipe_, nullptr, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    NoSigpipe(const NoSigpipe&) = delete;
    NoSigpipe& operator=(const NoSigpipe&) = delete;

private:
    sigset_t pipe_{}, old_{};
};

void free_reply(redisReply* r) { freeReplyObject(r); }

}  // namespace

RedisNode::RedisNode(RedisEndpoint endpoint, RedisCredentials credentials, timeval read_timeout, timeval write_timeout,
                     std::string shown)
    : endpoint_(std::move(endpoint)), credentials_(std::move(credentials)), shown_(std::move(shown)) {
    read_.timeout = read_timeout;
    write_.timeout = write_timeout;
}

RedisNode::~RedisNode() {
    drop(read_);
    drop(write_);
}

void RedisNode::drop(Connection& c) {
    std::lock_guard<std::mutex> lock(c.fd_mu);  // the socket closes: abort_writes() must not see it
    c.fd = -1;
    if (c.ctx != nullptr) redisFree(c.ctx);
    c.ctx = nullptr;
}

void RedisNode::abort_writes() {
    aborted_ = true;
    std::lock_guard<std::mutex> lock(write_.fd_mu);
    // A blocked send or receive returns at once (an error); the writer then drops the connection.
    if (write_.fd >= 0) ::shutdown(write_.fd, SHUT_RDWR);
}

Status RedisNode::fail(Connection& c, const std::string& what) {
    const std::string why = c.ctx != nullptr && c.ctx->err != 0 ? c.ctx->errstr : "no reply";
    drop(c);
    c.backoff = c.backoff.count() == 0 ? kFirstBackoff : std::min(kMaxBackoff, c.backoff * 2);
    c.next_attempt = std::chrono::steady_clock::now() + c.backoff;
    c.down = true;
    return unavailable("redis " + shown_ + " (node " + endpoint_.str() + "): " + what + " failed: " + why +
                       " (marked down for " + std::to_string(c.backoff.count()) + " ms)");
}

Status RedisNode::ensure(Connection& c) {
    if (c.ctx != nullptr) return {};
    const auto now = std::chrono::steady_clock::now();
    if (now < c.next_attempt) {
        return unavailable("redis " + shown_ + " (node " + endpoint_.str() + ") is down (retrying later)");
    }
    redisContext* ctx = redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, kConnectTimeout);
    if (ctx == nullptr || ctx->err != 0) {
        const std::string why = ctx != nullptr ? ctx->errstr : "out of memory";
        // A refused connection costs nothing: retry each second. One that timed out cost the
        // caller the connect timeout: back off as for a server that stops answering.
        const bool refused = ctx != nullptr && std::strstr(ctx->errstr, "refused") != nullptr;
        if (ctx != nullptr) redisFree(ctx);
        c.backoff = refused || c.backoff.count() == 0 ? kFirstBackoff : std::min(kMaxBackoff, c.backoff * 2);
        c.next_attempt = now + c.backoff;
        c.down = true;
        return unavailable("cannot connect to redis " + shown_ + " (node " + endpoint_.str() + "): " + why);
    }
    redisSetTimeout(ctx, c.timeout);
    {
        std::lock_guard<std::mutex> lock(c.fd_mu);
        if (&c == &write_ && aborted_) {
            redisFree(ctx);
            return unavailable("redis " + shown_ + ": writes aborted (shutting down)");
        }
        c.fd = ctx->fd;
    }
    c.ctx = ctx;  // AUTH and SELECT fail through fail(), which drops it again
    return handshake(c);
}

Status RedisNode::handshake(Connection& c) {
    const RedisCredentials& a = credentials_;
    auto checked = [&](void* raw, const char* what) -> Status {
        std::unique_ptr<redisReply, void (*)(redisReply*)> r(static_cast<redisReply*>(raw), free_reply);
        if (!r) return fail(c, what);
        if (r->type == REDIS_REPLY_ERROR) {
            static_cast<void>(fail(c, what));  // marks it down; the reply says why
            return unavailable("redis " + shown_ + " (node " + endpoint_.str() + "): " + what +
                               " failed: " + std::string(r->str, r->len));
        }
        return {};
    };
    if (!a.password.empty()) {
        LA_RETURN_IF_ERROR(checked(a.user.empty() ? redisCommand(c.ctx, "AUTH %b", a.password.data(), a.password.size())
                                                  : redisCommand(c.ctx, "AUTH %b %b", a.user.data(), a.user.size(),
                                                                 a.password.data(), a.password.size()),
                                   "AUTH"));
    }
    if (a.db != 0) LA_RETURN_IF_ERROR(checked(redisCommand(c.ctx, "SELECT %d", a.db), "SELECT"));
    return {};
}

Status RedisNode::call(Role role, const std::vector<RedisArgv>& commands, std::vector<RedisReplyPtr>* replies) {
    Connection& c = role == Role::kRead ? read_ : write_;
    std::lock_guard<std::mutex> lock(c.mu);
    if (role == Role::kWrite && aborted_) return unavailable("redis " + shown_ + ": writes aborted (shutting down)");
    NoSigpipe no_sigpipe;
    LA_RETURN_IF_ERROR(ensure(c));
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const RedisArgv& cmd : commands) {
        argv.clear();
        lens.clear();
        for (std::string_view w : cmd) {
            argv.push_back(w.data());
            lens.push_back(w.size());
        }
        redisAppendCommandArgv(c.ctx, int(argv.size()), argv.data(), lens.data());
    }
    replies->clear();
    for (size_t i = 0; i < commands.size(); ++i) {
        void* raw = nullptr;
        if (redisGetReply(c.ctx, &raw) != REDIS_OK || raw == nullptr) {
            replies->clear();
            return fail(c, commands[i].empty() ? "a call" : std::string(commands[i][0]));
        }
        replies->emplace_back(static_cast<redisReply*>(raw), free_reply);
    }
    c.backoff = std::chrono::milliseconds(0);
    c.down = false;
    return {};
}

}  // namespace lazyattn::store
