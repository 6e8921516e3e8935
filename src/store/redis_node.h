// RedisNode: one Redis server (a standalone Redis, or one node of a cluster) as the RedisTier
// talks to it: a read connection (the inference thread) and a write connection (the store's
// writer thread), each with its own deadline and back-off, so neither thread waits on the other.
// A connection that fails (refused, reset, no answer within its timeout) is dropped and the node
// marked down: every call fails fast with kUnavailable until a back-off passes (1 s, doubling to
// 30 s while it keeps failing; a refused connect retries each second), so a node that is down or
// hung costs one deadline per back-off, not one per call. abort_writes() cuts a write blocked on
// a hung node (shutdown of its socket) and refuses later ones.
#pragma once

#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "store/redis_slots.h"

struct redisContext;
struct redisReply;

namespace lazyattn::store {

struct RedisCredentials {
    std::string user;      // ACL user ("" = the default user)
    std::string password;  // "" = no AUTH
    int db = 0;            // SELECTed when not 0
};

using RedisArgv = std::vector<std::string_view>;  // one command's words (binary-safe)
using RedisReplyPtr = std::shared_ptr<redisReply>;

class RedisNode {
public:
    enum class Role { kRead, kWrite };

    // `shown` names the tier in messages (its redacted URL).
    RedisNode(RedisEndpoint endpoint, RedisCredentials credentials, timeval read_timeout, timeval write_timeout,
              std::string shown);
    ~RedisNode();
    RedisNode(const RedisNode&) = delete;
    RedisNode& operator=(const RedisNode&) = delete;

    const RedisEndpoint& endpoint() const { return endpoint_; }
    // Sends `commands` pipelined on the role's connection (connecting first when needed) and reads
    // one reply each; error replies are replies. kUnavailable when the node is down, or the call
    // failed (the node is then marked down).
    Status call(Role role, const std::vector<RedisArgv>& commands, std::vector<RedisReplyPtr>* replies);
    bool down() const { return read_.down.load() || write_.down.load(); }
    void abort_writes();

private:
    struct Connection {
        std::mutex mu;
        redisContext* ctx = nullptr;
        timeval timeout{};
        std::chrono::steady_clock::time_point next_attempt{};
        // 0: answering; else the wait before the next attempt. Reset only by an answer (a
        // server that accepts connections but never answers keeps doubling it).
        std::chrono::milliseconds backoff{0};
        std::atomic<bool> down{false};  // read by usage() from any thread
        // The socket, for abort_writes() on another thread; set and cleared (the socket closed)
        // under fd_mu, so an abort never reaches a later connection's reused descriptor.
        std::mutex fd_mu;
        int fd = -1;
    };
    Status ensure(Connection& c);                         // c.mu held
    Status fail(Connection& c, const std::string& what);  // c.mu held: dropped, marked down
    Status handshake(Connection& c);                      // c.mu held: AUTH, SELECT
    void drop(Connection& c);

    RedisEndpoint endpoint_;
    RedisCredentials credentials_;
    std::string shown_;
    Connection read_, write_;
    std::atomic<bool> aborted_{false};
};

}  // namespace lazyattn::store
