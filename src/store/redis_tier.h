// RedisTier (--kv-store redis://HOST:PORT[/DB]): entries as Redis strings under
// "lazyattn:seg:<key>", written with one SET (NX unless overwriting), so a reader never sees part
// of an entry and two replicas writing one segment both succeed (the first stays). Reads use one
// connection, writes another (the inference and writer threads never wait on each other).
// When the server is unreachable each call fails fast with kUnavailable and the connection is
// retried at most once a second, so serving goes on by computing.
#pragma once

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
    explicit RedisTier(RedisAddress address, const std::string& url);
    ~RedisTier() override;
    std::string name() const override { return "redis"; }
    std::string where() const override { return url_; }
    Expected<Blob> get(const std::string& key) override;
    Expected<bool> contains(const std::string& key) override;
    Expected<bool> put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) override;

private:
    struct Connection {
        std::mutex mu;
        redisContext* ctx = nullptr;
        std::chrono::steady_clock::time_point next_attempt{};
    };
    // The connection, (re)connected when down and the retry interval has passed.
    Status ensure(Connection& c);
    void drop(Connection& c);
    RedisAddress address_;
    std::string url_;
    Connection read_, write_;
};

}  // namespace lazyattn::store
