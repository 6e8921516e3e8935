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
// (lazyattn:seg:index, scored by last use in unix microseconds) and counted in lazyattn:seg:bytes, by a script that
// runs atomically in Redis, so replicas sharing one Redis keep one account; a write past the cap
// evicts the least recently used entries down to 90%. A hit renews its entry's score (one
// pipelined round trip with the GET). Entries written before the index existed are not counted.
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
    };
    // The connection, (re)connected when down and the back-off has passed.
    Status ensure(Connection& c);
    // A failed call: the connection is dropped and the tier marked down (the back-off grows).
    Status fail(Connection& c, const std::string& what);
    // A call answered: the tier is up.
    static void answered(Connection& c);
    void drop(Connection& c);
    RedisAddress address_;
    std::string url_;
    TierOptions options_;
    Connection read_, write_;
    mutable std::mutex usage_mu_;
    TierUsage usage_;  // under usage_mu_ (bytes as the last write's script counted them)
};

}  // namespace lazyattn::store
