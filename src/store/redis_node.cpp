#include "store/redis_node.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace lazyattn::store {
namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(1000);
constexpr auto kMaxBackoff = std::chrono::milliseconds(30000);
constexpr auto kConnectTimeout = std::chrono::milliseconds(300);

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

// hiredis' own reply constructors, with arrays counted against the connection's budget (the
// reader's privdata): a constructor that returns NULL makes the reader fail ("Out of memory")
// and free what it built. Strings need no hook: they are created only once all their bytes
// arrived, which the byte bound caps first.
void* create_bounded_array(const redisReadTask* task, int elements);

struct ReplyFunctions {
    redisReplyObjectFunctions defaults, bounded;
};
const ReplyFunctions& reply_functions() {
    static const ReplyFunctions f = [] {
        redisReader* r = redisReaderCreate();
        ReplyFunctions out{*r->fn, *r->fn};
        redisReaderFree(r);
        out.bounded.createArray = create_bounded_array;
        return out;
    }();
    return f;
}

void* create_bounded_array(const redisReadTask* task, int elements) {
    auto* budget = static_cast<RedisReplyBudget*>(task->privdata);
    if (elements > budget->elements) {
        budget->refused_array = elements;
        return nullptr;
    }
    budget->elements -= elements;
    return reply_functions().defaults.createArray(task, elements);
}

std::string millis(std::chrono::steady_clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// Waits until `fd` is ready for `events` (or has an error or hang-up, which the read or write
// then reports) or the deadline passes.
Status wait_ready(int fd, short events, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) return unavailable("past the call's deadline");
        pollfd p{fd, events, 0};
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
        const int n = ::poll(&p, 1, int(std::min<int64_t>(ms, 60000)));
        if (n > 0) return {};
        if (n < 0 && errno != EINTR) return io_error(std::string("poll: ") + std::strerror(errno));
    }
}

std::string first_word(const std::vector<RedisArgv>& commands) {
    return commands.empty() || commands[0].empty() ? "a call" : std::string(commands[0][0]);
}

}  // namespace

void bound_reader(redisReader* reader, RedisReplyBudget* budget) {
    reader->fn = const_cast<redisReplyObjectFunctions*>(&reply_functions().bounded);
    reader->privdata = budget;
}

RedisNode::RedisNode(RedisEndpoint endpoint, RedisCredentials credentials, const RedisCallLimits& limits,
                     std::string shown)
    : endpoint_(std::move(endpoint)), credentials_(std::move(credentials)), limits_(limits), shown_(std::move(shown)) {
    read_.deadline = limits.read_deadline;
    write_.deadline = limits.write_deadline;
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

Status RedisNode::fail(Connection& c, const std::string& what, const std::string& why) {
    drop(c);
    c.backoff = c.backoff.count() == 0 ? kFirstBackoff : std::min(kMaxBackoff, c.backoff * 2);
    c.next_attempt = Clock::now() + c.backoff;
    c.down = true;
    return unavailable("redis " + shown_ + " (node " + endpoint_.str() + "): " + what + " failed: " + why +
                       " (marked down for " + std::to_string(c.backoff.count()) + " ms)");
}

Status RedisNode::ensure(Connection& c, Clock::time_point deadline) {
    if (c.ctx != nullptr) return {};
    const auto now = Clock::now();
    if (now < c.next_attempt) {
        return unavailable("redis " + shown_ + " (node " + endpoint_.str() + ") is down (retrying later)");
    }
    const auto connect_us = std::chrono::duration_cast<std::chrono::microseconds>(
        std::clamp<Clock::duration>(deadline - now, std::chrono::milliseconds(1), kConnectTimeout));
    const timeval timeout{time_t(connect_us.count() / 1000000), suseconds_t(connect_us.count() % 1000000)};
    redisContext* ctx = redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, timeout);
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
    // Non-blocking from here: every wait is our poll() against the call's deadline. hiredis then
    // treats EAGAIN as "try again later", not as an error.
    ::fcntl(ctx->fd, F_SETFL, ::fcntl(ctx->fd, F_GETFL) | O_NONBLOCK);
    ctx->flags &= ~REDIS_BLOCK;
    bound_reader(ctx->reader, &c.budget);
    {
        std::lock_guard<std::mutex> lock(c.fd_mu);
        if (&c == &write_ && aborted_) {
            redisFree(ctx);
            return unavailable("redis " + shown_ + ": writes aborted (shutting down)");
        }
        c.fd = ctx->fd;
    }
    c.ctx = ctx;  // AUTH and SELECT fail through fail(), which drops it again
    return handshake(c, deadline);
}

Status RedisNode::handshake(Connection& c, Clock::time_point deadline) {
    const RedisCredentials& a = credentials_;
    std::vector<const char*> what;
    if (!a.password.empty()) {
        if (a.user.empty()) {
            redisAppendCommand(c.ctx, "AUTH %b", a.password.data(), a.password.size());
        } else {
            redisAppendCommand(c.ctx, "AUTH %b %b", a.user.data(), a.user.size(), a.password.data(), a.password.size());
        }
        what.push_back("AUTH");
    }
    if (a.db != 0) {
        redisAppendCommand(c.ctx, "SELECT %d", a.db);
        what.push_back("SELECT");
    }
    if (what.empty()) return {};
    std::vector<RedisReplyPtr> replies;
    if (Status st = exchange(c, what.size(), deadline, &replies); !st.ok()) return fail(c, what[0], st.message());
    for (size_t i = 0; i < replies.size(); ++i) {
        const redisReply* r = replies[i].get();
        if (r->type == REDIS_REPLY_ERROR) {
            static_cast<void>(fail(c, what[i], "refused"));  // marks it down; the reply says why
            return unavailable("redis " + shown_ + " (node " + endpoint_.str() + "): " + what[i] +
                               " failed: " + std::string(r->str, r->len));
        }
    }
    return {};
}

Status RedisNode::send_all(Connection& c, Clock::time_point deadline) {
    for (;;) {
        int done = 0;
        if (redisBufferWrite(c.ctx, &done) != REDIS_OK) return io_error(c.ctx->errstr);
        if (done != 0) return {};
        LA_RETURN_IF_ERROR(wait_ready(c.fd, POLLOUT, deadline));
    }
}

Status RedisNode::receive(Connection& c, Clock::time_point deadline, int64_t* bytes_read) {
    char buf[64 * 1024];
    for (;;) {
        // A sender fast enough to keep the socket full is cut at the deadline too.
        if (Clock::now() >= deadline) return unavailable("past the call's deadline");
        const ssize_t n = ::read(c.fd, buf, sizeof buf);
        if (n == 0) return io_error("the server closed the connection");
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
            if (errno == EINTR) continue;
            return io_error(std::string("read: ") + std::strerror(errno));
        }
        *bytes_read += n;
        if (*bytes_read > limits_.max_reply_bytes) {
            return out_of_range("the reply passed " + std::to_string(limits_.max_reply_bytes) + " bytes");
        }
        if (redisReaderFeed(c.ctx->reader, buf, size_t(n)) != REDIS_OK) return io_error(c.ctx->reader->errstr);
        if (size_t(n) < sizeof buf) return {};  // drained: let the reader look before reading on
    }
}

Status RedisNode::exchange(Connection& c, size_t n, Clock::time_point deadline, std::vector<RedisReplyPtr>* replies) {
    c.budget = RedisReplyBudget{limits_.max_reply_elements, -1};
    LA_RETURN_IF_ERROR(send_all(c, deadline));
    int64_t bytes_read = 0;
    while (replies->size() < n) {
        void* raw = nullptr;
        if (redisGetReplyFromReader(c.ctx, &raw) != REDIS_OK) {
            if (c.budget.refused_array >= 0) {
                return out_of_range("an array of " + std::to_string(c.budget.refused_array) +
                                    " elements passed the reply's bound of " +
                                    std::to_string(limits_.max_reply_elements));
            }
            return io_error(std::string("protocol error: ") + c.ctx->errstr);
        }
        if (raw != nullptr) {
            replies->emplace_back(static_cast<redisReply*>(raw), free_reply);
            continue;
        }
        Status st = wait_ready(c.fd, POLLIN, deadline);
        if (st.ok()) st = receive(c, deadline, &bytes_read);
        if (st.code() == StatusCode::kUnavailable) {  // the deadline
            return unavailable(st.message() + " (" + millis(c.deadline) + "; " + std::to_string(bytes_read) +
                               " bytes read)");
        }
        LA_RETURN_IF_ERROR(st);
    }
    return {};
}

Status RedisNode::call(Role role, const std::vector<RedisArgv>& commands, std::vector<RedisReplyPtr>* replies) {
    Connection& c = role == Role::kRead ? read_ : write_;
    std::lock_guard<std::mutex> lock(c.mu);
    replies->clear();
    if (role == Role::kWrite && aborted_) return unavailable("redis " + shown_ + ": writes aborted (shutting down)");
    NoSigpipe no_sigpipe;
    size_t request_bytes = 0;
    for (const RedisArgv& cmd : commands) {
        for (std::string_view w : cmd) request_bytes += w.size();
    }
    const auto allowance = role == Role::kWrite
                               ? std::chrono::milliseconds(int64_t(request_bytes) * 1000 / kMinSendBytesPerSecond)
                               : std::chrono::milliseconds(0);
    const Clock::time_point deadline = Clock::now() + c.deadline + allowance;
    LA_RETURN_IF_ERROR(ensure(c, deadline));
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
    if (Status st = exchange(c, commands.size(), deadline, replies); !st.ok()) {
        replies->clear();
        return fail(c, first_word(commands), st.message());
    }
    c.backoff = std::chrono::milliseconds(0);
    c.down = false;
    return {};
}

}  // namespace lazyattn::store
