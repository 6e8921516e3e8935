// RedisNode: one Redis server (a standalone Redis, or one node of a cluster) as the RedisTier
// talks to it: a read connection (the inference thread) and a write connection (the store's
// writer thread), each with its own deadline and back-off, so neither thread waits on the other.
// A call's deadline covers the whole call (connect, send, every reply), not each socket read: a
// reply that keeps trickling in is cut at the deadline like one that never comes. A reply is
// bounded too: bytes read per call, and array elements (hiredis would otherwise allocate whatever
// an array header announces). A call that fails (refused, reset, past its deadline, over a bound,
// a protocol error) drops the connection and marks the node down: every call fails fast with
// kUnavailable until a back-off passes (1 s, doubling to 30 s while it keeps failing; a refused
// connect retries each second), so a node that is down, hung or answering garbage costs one
// deadline per back-off, not one per call. abort_writes() cuts a write blocked on a hung node
// (shutdown of its socket) and refuses later ones.
#pragma once

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
struct redisReader;
struct redisReply;

namespace lazyattn::store {

struct RedisCredentials {
    std::string user;      // ACL user ("" = the default user)
    std::string password;  // "" = no AUTH
    int db = 0;            // SELECTed when not 0
};

using RedisArgv = std::vector<std::string_view>;  // one command's words (binary-safe)
using RedisReplyPtr = std::shared_ptr<redisReply>;

// What bounds one RedisNode::call.
struct RedisCallLimits {
    // The whole call on the inference thread's connection (--kv-store-timeout-ms).
    std::chrono::milliseconds read_deadline{250};
    // The whole call on the writer's, plus the time its request takes at kMinSendBytesPerSecond
    // (an entry of hundreds of megabytes over a slow link must still go through).
    std::chrono::milliseconds write_deadline{5000};
    // Bytes read per call (every reply with its framing): the largest entry plus room for the
    // framing and the small replies pipelined with it.
    int64_t max_reply_bytes = 512ll << 20;
    // Array elements per call, nested ones included: what CLUSTER SLOTS of the largest cluster or
    // a SCAN page needs is far less. hiredis allocates an array's pointers when its header
    // arrives, so "*2000000000" alone would cost 16 GB.
    int64_t max_reply_elements = 1 << 20;
};
constexpr int64_t kMinSendBytesPerSecond = 8ll << 20;

// What the reply being read may still allocate: hiredis' reader calls our hook with it for each
// array header (redis_node.cpp).
struct RedisReplyBudget {
    int64_t elements = 0;
    int64_t refused_array = -1;  // the size of an array refused, for the message
};

// Makes `reader` (a connection's, or one of its own in the fuzz target) count every array header
// against `budget` and fail on one past it, before hiredis allocates its pointers. `budget`
// must outlive the reader's use.
void bound_reader(redisReader* reader, RedisReplyBudget* budget);

class RedisNode {
public:
    enum class Role { kRead, kWrite };

    // `shown` names the tier in messages (its redacted URL).
    RedisNode(RedisEndpoint endpoint, RedisCredentials credentials, const RedisCallLimits& limits, std::string shown);
    ~RedisNode();
    RedisNode(const RedisNode&) = delete;
    RedisNode& operator=(const RedisNode&) = delete;

    const RedisEndpoint& endpoint() const { return endpoint_; }
    // Sends `commands` pipelined on the role's connection (connecting first when needed) and reads
    // one reply each, all within the role's deadline and the reply bounds; error replies are
    // replies. kUnavailable when the node is down, or the call failed (the node is then marked
    // down).
    Status call(Role role, const std::vector<RedisArgv>& commands, std::vector<RedisReplyPtr>* replies);
    bool down() const { return read_.down.load() || write_.down.load(); }
    void abort_writes();

private:
    using Clock = std::chrono::steady_clock;
    struct Connection {
        std::mutex mu;
        redisContext* ctx = nullptr;
        std::chrono::milliseconds deadline{0};
        std::chrono::steady_clock::time_point next_attempt{};
        // 0: answering; else the wait before the next attempt. Reset only by an answer (a
        // server that accepts connections but never answers keeps doubling it).
        std::chrono::milliseconds backoff{0};
        std::atomic<bool> down{false};  // read by usage() from any thread
        // The socket, for abort_writes() on another thread; set and cleared (the socket closed)
        // under fd_mu, so an abort never reaches a later connection's reused descriptor.
        std::mutex fd_mu;
        int fd = -1;
        RedisReplyBudget budget;  // the reader's privdata while connected
    };
    // The rest under c.mu.
    Status ensure(Connection& c, Clock::time_point deadline);
    Status handshake(Connection& c, Clock::time_point deadline);  // AUTH, SELECT
    // Sends what the context holds, then reads `n` replies, within `deadline` and the bounds.
    // The error says why (the caller fails the connection).
    Status exchange(Connection& c, size_t n, Clock::time_point deadline, std::vector<RedisReplyPtr>* replies);
    Status send_all(Connection& c, Clock::time_point deadline);
    // What the socket holds now, into the reader.
    Status receive(Connection& c, Clock::time_point deadline, int64_t* bytes_read);
    Status fail(Connection& c, const std::string& what, const std::string& why);  // dropped, marked down
    void drop(Connection& c);

    RedisEndpoint endpoint_;
    RedisCredentials credentials_;
    RedisCallLimits limits_;
    std::string shown_;
    Connection read_, write_;
    std::atomic<bool> aborted_{false};
};

}  // namespace lazyattn::store
