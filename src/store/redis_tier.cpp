#include "store/redis_tier.h"

#include <hiredis/hiredis.h>

#include <charconv>

namespace lazyattn::store {
namespace {

constexpr auto kRetryInterval = std::chrono::seconds(1);
constexpr timeval kConnectTimeout{0, 300 * 1000};
constexpr timeval kCommandTimeout{5, 0};

std::string redis_key(const std::string& key) { return "lazyattn:seg:" + key; }

bool parse_int(std::string_view s, int* out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

using Reply = std::unique_ptr<redisReply, void (*)(redisReply*)>;
void free_reply(redisReply* r) { freeReplyObject(r); }

// %XX escapes of a URL's userinfo; false on a malformed escape.
bool percent_decode(std::string_view in, std::string* out) {
    out->clear();
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out->push_back(in[i]);
            continue;
        }
        unsigned v = 0;  // unsigned: from_chars takes no sign then
        if (i + 2 >= in.size()) return false;
        const auto r = std::from_chars(in.data() + i + 1, in.data() + i + 3, v, 16);
        if (r.ec != std::errc() || r.ptr != in.data() + i + 3) return false;
        out->push_back(char(v));
        i += 2;
    }
    return true;
}

}  // namespace

std::string redact_redis_url(const std::string& url) {
    const size_t scheme = url.find("://");
    const size_t at = url.rfind('@');
    if (scheme == std::string::npos || at == std::string::npos || at < scheme) return url;
    const size_t colon = url.find(':', scheme + 3);
    if (colon == std::string::npos || colon > at) return url;  // a user name only
    return url.substr(0, colon + 1) + "***" + url.substr(at);
}

Expected<RedisAddress> parse_redis_url(const std::string& url) {
    const std::string scheme = "redis://";
    const std::string shown = redact_redis_url(url);
    if (url.rfind(scheme, 0) != 0) return invalid_argument("'" + shown + "' is not a redis:// URL");
    std::string_view rest = std::string_view(url).substr(scheme.size());
    RedisAddress a;
    if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
        const std::string_view userinfo = rest.substr(0, at);
        const size_t colon = userinfo.find(':');
        if (colon == std::string_view::npos) {
            return invalid_argument("'" + shown + "': the part before '@' must be [USER]:PASSWORD");
        }
        if (!percent_decode(userinfo.substr(0, colon), &a.user) ||
            !percent_decode(userinfo.substr(colon + 1), &a.password)) {
            return invalid_argument("'" + shown + "': a bad %-escape before '@'");
        }
        if (a.password.empty()) return invalid_argument("'" + shown + "': empty password before '@'");
        rest = rest.substr(at + 1);
    }
    if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
        if (!parse_int(rest.substr(slash + 1), &a.db) || a.db < 0) {
            return invalid_argument("'" + shown + "': the database after '/' must be a number");
        }
        rest = rest.substr(0, slash);
    }
    const size_t colon = rest.rfind(':');
    a.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos &&
        (!parse_int(rest.substr(colon + 1), &a.port) || a.port <= 0 || a.port > 65535)) {
        return invalid_argument("'" + shown + "': the port must be a number in [1, 65535]");
    }
    if (a.host.empty()) return invalid_argument("'" + shown + "' names no host (redis://HOST:PORT[/DB])");
    return a;
}

RedisTier::RedisTier(RedisAddress address, const std::string& url)
    : address_(std::move(address)), url_(redact_redis_url(url)) {}

RedisTier::~RedisTier() {
    drop(read_);
    drop(write_);
}

void RedisTier::drop(Connection& c) {
    if (c.ctx != nullptr) redisFree(c.ctx);
    c.ctx = nullptr;
}

Status RedisTier::ensure(Connection& c) {
    if (c.ctx != nullptr) return {};
    const auto now = std::chrono::steady_clock::now();
    if (now < c.next_attempt) return unavailable("redis " + url_ + " is unreachable (retrying)");
    c.next_attempt = now + kRetryInterval;
    redisContext* ctx = redisConnectWithTimeout(address_.host.c_str(), address_.port, kConnectTimeout);
    if (ctx == nullptr || ctx->err != 0) {
        const std::string why = ctx != nullptr ? ctx->errstr : "out of memory";
        if (ctx != nullptr) redisFree(ctx);
        return unavailable("cannot connect to redis " + url_ + ": " + why);
    }
    redisSetTimeout(ctx, kCommandTimeout);
    if (!address_.password.empty()) {
        Reply r(
            static_cast<redisReply*>(
                address_.user.empty() ? redisCommand(ctx, "AUTH %b", address_.password.data(), address_.password.size())
                                      : redisCommand(ctx, "AUTH %b %b", address_.user.data(), address_.user.size(),
                                                     address_.password.data(), address_.password.size())),
            free_reply);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            const std::string why = r ? std::string(r->str, r->len) : std::string(ctx->errstr);
            redisFree(ctx);
            return unavailable("redis " + url_ + ": AUTH failed: " + why);
        }
    }
    if (address_.db != 0) {
        Reply r(static_cast<redisReply*>(redisCommand(ctx, "SELECT %d", address_.db)), free_reply);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            const std::string why = r ? std::string(r->str, r->len) : std::string(ctx->errstr);
            redisFree(ctx);
            return unavailable("redis " + url_ + ": SELECT failed: " + why);
        }
    }
    c.ctx = ctx;
    return {};
}

Expected<Blob> RedisTier::get(const std::string& key) {
    std::lock_guard<std::mutex> lock(read_.mu);
    LA_RETURN_IF_ERROR(ensure(read_));
    const std::string k = redis_key(key);
    auto* raw = static_cast<redisReply*>(redisCommand(read_.ctx, "GET %b", k.data(), k.size()));
    if (raw == nullptr) {
        const std::string why = read_.ctx->errstr;
        drop(read_);
        return unavailable("redis " + url_ + ": GET failed: " + why);
    }
    std::shared_ptr<redisReply> reply(raw, free_reply);
    if (reply->type == REDIS_REPLY_NIL) return not_found("no entry " + key);
    if (reply->type != REDIS_REPLY_STRING) {
        return io_error("redis " + url_ + ": GET answered " +
                        (reply->type == REDIS_REPLY_ERROR ? std::string(reply->str, reply->len) : "a non-string"));
    }
    Blob b;
    b.bytes = {reinterpret_cast<const uint8_t*>(reply->str), reply->len};
    b.owner = std::move(reply);
    return b;
}

Expected<bool> RedisTier::contains(const std::string& key) {
    std::lock_guard<std::mutex> lock(read_.mu);
    LA_RETURN_IF_ERROR(ensure(read_));
    const std::string k = redis_key(key);
    Reply r(static_cast<redisReply*>(redisCommand(read_.ctx, "EXISTS %b", k.data(), k.size())), free_reply);
    if (!r) {
        const std::string why = read_.ctx->errstr;
        drop(read_);
        return unavailable("redis " + url_ + ": EXISTS failed: " + why);
    }
    if (r->type != REDIS_REPLY_INTEGER) return io_error("redis " + url_ + ": EXISTS answered a non-integer");
    return r->integer > 0;
}

Expected<bool> RedisTier::put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) {
    std::lock_guard<std::mutex> lock(write_.mu);
    LA_RETURN_IF_ERROR(ensure(write_));
    const std::string k = redis_key(key);
    auto* raw = static_cast<redisReply*>(
        overwrite ? redisCommand(write_.ctx, "SET %b %b", k.data(), k.size(), bytes.data(), bytes.size())
                  : redisCommand(write_.ctx, "SET %b %b NX", k.data(), k.size(), bytes.data(), bytes.size()));
    if (raw == nullptr) {
        const std::string why = write_.ctx->errstr;
        drop(write_);
        return unavailable("redis " + url_ + ": SET failed: " + why);
    }
    Reply r(raw, free_reply);
    if (r->type == REDIS_REPLY_ERROR)
        return io_error("redis " + url_ + ": SET refused: " + std::string(r->str, r->len));
    return r->type != REDIS_REPLY_NIL;  // NX on a present key answers nil
}

}  // namespace lazyattn::store
