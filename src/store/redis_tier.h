// RedisTier (--kv-store redis://HOST:PORT[/DB]): entries as Redis strings under
// "lazyattn:seg:<key>", written with one SET (NX unless overwriting), so a reader never sees part
// of an entry and two replicas writing one segment both succeed (the first stays). Reads use one
// connection, writes another (the inference and writer threads never wait on each other).
// When the server is unreachable, or accepts but does not answer within the read timeout, the
// tier is marked down: every call fails fast with kUnavailable until a back-off passes (1 s,
// doubling to 30 s while it stays down), so serving goes on by computing and a hung Redis costs
// one timeout per back-off, not one per lookup.
//
// Size cap (TierOptions::max_bytes): every entry this tier writes is listed in a sorted set
// (lazyattn:seg:index, scored by last use in unix microseconds), its size kept in a hash
// (lazyattn:seg:sizes) and summed in lazyattn:seg:bytes, all by one script that runs atomically
// in Redis, so replicas sharing one Redis keep one account; a write past the cap evicts the least
// recently used entries down to 90%. A hit renews its entry's score (pipelined with the GET).
// Redis may drop entries itself (maxmemory with an LRU policy, a hand's DEL): each write sweeps
// part of the index and a GET that finds an indexed entry gone drops it from the account
// ("forgotten", never counted as an eviction), so the account follows what Redis holds.
// The script checks the bookkeeping it reads (key types, a counter that is a non-negative
// integer, index and sizes of one length, and now and then that the sizes sum to the counter);
// garbage there is counted (account_errors), logged once, and the account rebuilt from the
// entries present (SCAN, on the writer thread), which also adopts entries written before it.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

#include "store/store_tier.h"

struct redisContext;

namespace lazyattn::store {

struct RedisAddress {
    std::string user;      // ACL user ("" = the default user)
    std::string password;  // "" = no AUTH
    std::string host;
    int port = 6379;
    int db = 0;
};

// Parses redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (userinfo percent-decoded; kInvalidArgument
// naming what is wrong, never echoing the password).
Expected<RedisAddress> parse_redis_url(const std::string& url);
// The URL with any password replaced by "***" (for logs, errors and stats).
std::string redact_redis_url(const std::string& url);

class RedisTier : public StoreTier {
public:
    // `url` is only shown (logs, stats): it is stored redacted.
    explicit RedisTier(RedisAddress address, const std::string& url, const TierOptions& options = {});
    ~RedisTier() override;
    std::string name() const override { return "redis"; }
    std::string where() const override { return url_; }
    Expected<Blob> get(const std::string& key) override;
    Expected<bool> contains(const std::string& key) override;
    Expected<bool> put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) override;
    TierUsage usage() const override;
    void abort_writes() override;  // shuts the write connection's socket down

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
    // The connection, (re)connected when down and the back-off has passed.
    Status ensure(Connection& c);
    // A failed call: the connection is dropped and the tier marked down (the back-off grows).
    Status fail(Connection& c, const std::string& what);
    // A call answered: the tier is up.
    static void answered(Connection& c);
    void drop(Connection& c);
    // Runs the accounting script for a written entry (write_.mu held); a broken account is
    // rebuilt and the script run again.
    Status account_locked(const std::string& redis_key, size_t bytes);
    Status rebuild_account_locked(const std::string& why);  // write_.mu held: SCAN, adopting entries
    void note_account_error(const std::string& why);        // counted; the first one logged
    RedisAddress address_;
    std::string url_;
    TierOptions options_;
    Connection read_, write_;
    mutable std::mutex usage_mu_;
    TierUsage usage_;  // under usage_mu_ (bytes as the last write's script counted them)
    std::atomic<bool> aborted_{false};
    int64_t num_accounted_ = 0;                            // write_.mu held: accounting runs, for the periodic audit
    std::chrono::steady_clock::time_point next_repair_{};  // write_.mu held: after an error reply
};

}  // namespace lazyattn::store
