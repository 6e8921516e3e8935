#include "store/redis_tier.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>

namespace lazyattn::store {
namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(1000);
constexpr auto kMaxBackoff = std::chrono::milliseconds(30000);
constexpr timeval kConnectTimeout{0, 300 * 1000};
constexpr timeval kWriteTimeout{5, 0};  // the writer thread's, for entries of megabytes

const char* kIndexKey = "lazyattn:seg:index";  // sorted set: entry key -> last use (ms)
const char* kBytesKey = "lazyattn:seg:bytes";  // bytes of the indexed entries

std::string redis_key(const std::string& key) { return "lazyattn:seg:" + key; }

timeval to_timeval(double ms) {
    const auto us = int64_t(std::max(1.0, ms) * 1000);
    return timeval{time_t(us / 1000000), suseconds_t(us % 1000000)};
}

// The score of a use in the LRU index: unix microseconds (exact in a double), strictly
// increasing within this process, so a use always ranks newer than every earlier one even
// within the clock's resolution (ties would rank by key name).
int64_t next_use_us() {
    static std::atomic<int64_t> latest{0};
    const int64_t now =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    int64_t seen = latest.load();
    int64_t mine = std::max(now, seen + 1);
    while (!latest.compare_exchange_weak(seen, mine)) mine = std::max(now, seen + 1);
    return mine;
}

// Counts a written entry (KEYS[1]) of ARGV[1] more bytes under last use ARGV[2], then, past the
// cap ARGV[3] (0: none), deletes the least recently used entries (never KEYS[1]) down to 90%.
// Returns {bytes held, entries evicted}. Atomic in Redis: replicas sharing it keep one account.
const char* kAccountScript = R"lua(
local total = redis.call('INCRBY', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], KEYS[1])
local cap = tonumber(ARGV[3])
local evicted = 0
if cap > 0 and total > cap then
  local target = math.floor(cap * 0.9)
  while total > target do
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 1)
    local victim = oldest[1]
    if victim == KEYS[1] then victim = oldest[2] end
    if victim == nil then break end
    local n = redis.call('STRLEN', victim)
    redis.call('DEL', victim)
    redis.call('ZREM', KEYS[2], victim)
    total = redis.call('DECRBY', KEYS[3], n)
    evicted = evicted + 1
  end
end
return {total, evicted}
)lua";

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

RedisTier::RedisTier(RedisAddress address, const std::string& url, const TierOptions& options)
    : address_(std::move(address)), url_(redact_redis_url(url)), options_(options) {
    read_.timeout = to_timeval(options.read_timeout_ms);
    write_.timeout = kWriteTimeout;
    usage_.max_bytes = options.max_bytes;
}

TierUsage RedisTier::usage() const {
    std::lock_guard<std::mutex> lock(usage_mu_);
    TierUsage u = usage_;
    u.up = !read_.down.load() && !write_.down.load();
    return u;
}

void RedisTier::answered(Connection& c) {
    c.backoff = std::chrono::milliseconds(0);
    c.down = false;
}

Status RedisTier::fail(Connection& c, const std::string& what) {
    const std::string why = c.ctx != nullptr && c.ctx->err != 0 ? c.ctx->errstr : "no reply";
    drop(c);
    c.backoff = c.backoff.count() == 0 ? kFirstBackoff : std::min(kMaxBackoff, c.backoff * 2);
    c.next_attempt = std::chrono::steady_clock::now() + c.backoff;
    c.down = true;
    return unavailable("redis " + url_ + ": " + what + " failed: " + why + " (marked down for " +
                       std::to_string(c.backoff.count()) + " ms)");
}

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
    if (now < c.next_attempt) return unavailable("redis " + url_ + " is down (retrying later)");
    redisContext* ctx = redisConnectWithTimeout(address_.host.c_str(), address_.port, kConnectTimeout);
    if (ctx == nullptr || ctx->err != 0) {
        const std::string why = ctx != nullptr ? ctx->errstr : "out of memory";
        // A refused connection costs nothing: retry each second. One that timed out cost the
        // caller the connect timeout: back off as for a server that stops answering.
        const bool refused = ctx != nullptr && std::strstr(ctx->errstr, "refused") != nullptr;
        if (ctx != nullptr) redisFree(ctx);
        c.backoff = refused || c.backoff.count() == 0 ? kFirstBackoff : std::min(kMaxBackoff, c.backoff * 2);
        c.next_attempt = now + c.backoff;
        c.down = true;
        return unavailable("cannot connect to redis " + url_ + ": " + why);
    }
    redisSetTimeout(ctx, c.timeout);
    c.ctx = ctx;  // AUTH and SELECT below fail through fail(), which drops it again
    if (!address_.password.empty()) {
        Reply r(
            static_cast<redisReply*>(
                address_.user.empty() ? redisCommand(ctx, "AUTH %b", address_.password.data(), address_.password.size())
                                      : redisCommand(ctx, "AUTH %b %b", address_.user.data(), address_.user.size(),
                                                     address_.password.data(), address_.password.size())),
            free_reply);
        if (!r) return fail(c, "AUTH");
        if (r->type == REDIS_REPLY_ERROR) {
            fail(c, "AUTH");
            return unavailable("redis " + url_ + ": AUTH failed: " + std::string(r->str, r->len));
        }
    }
    if (address_.db != 0) {
        Reply r(static_cast<redisReply*>(redisCommand(ctx, "SELECT %d", address_.db)), free_reply);
        if (!r) return fail(c, "SELECT");
        if (r->type == REDIS_REPLY_ERROR) {
            fail(c, "SELECT");
            return unavailable("redis " + url_ + ": SELECT failed: " + std::string(r->str, r->len));
        }
    }
    return {};
}

Expected<Blob> RedisTier::get(const std::string& key) {
    std::lock_guard<std::mutex> lock(read_.mu);
    LA_RETURN_IF_ERROR(ensure(read_));
    const std::string k = redis_key(key), now = std::to_string(next_use_us());
    // GET, and the entry's last use renewed when it is indexed: one round trip.
    redisAppendCommand(read_.ctx, "GET %b", k.data(), k.size());
    redisAppendCommand(read_.ctx, "ZADD %s XX %b %b", kIndexKey, now.data(), now.size(), k.data(), k.size());
    void* raw = nullptr;
    if (redisGetReply(read_.ctx, &raw) != REDIS_OK || raw == nullptr) return fail(read_, "GET");
    std::shared_ptr<redisReply> reply(static_cast<redisReply*>(raw), free_reply);
    void* touched = nullptr;
    if (redisGetReply(read_.ctx, &touched) != REDIS_OK || touched == nullptr) return fail(read_, "GET");
    freeReplyObject(touched);
    answered(read_);
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
    if (!r) return fail(read_, "EXISTS");
    answered(read_);
    if (r->type != REDIS_REPLY_INTEGER) return io_error("redis " + url_ + ": EXISTS answered a non-integer");
    return r->integer > 0;
}

Expected<bool> RedisTier::put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) {
    std::lock_guard<std::mutex> lock(write_.mu);
    LA_RETURN_IF_ERROR(ensure(write_));
    const std::string k = redis_key(key);
    // The size it replaces (0 when new), then the write; pipelined.
    redisAppendCommand(write_.ctx, "STRLEN %b", k.data(), k.size());
    if (overwrite) {
        redisAppendCommand(write_.ctx, "SET %b %b", k.data(), k.size(), bytes.data(), bytes.size());
    } else {
        redisAppendCommand(write_.ctx, "SET %b %b NX", k.data(), k.size(), bytes.data(), bytes.size());
    }
    void* raw = nullptr;
    if (redisGetReply(write_.ctx, &raw) != REDIS_OK || raw == nullptr) return fail(write_, "STRLEN");
    Reply old(static_cast<redisReply*>(raw), free_reply);
    if (redisGetReply(write_.ctx, &raw) != REDIS_OK || raw == nullptr) return fail(write_, "SET");
    Reply r(static_cast<redisReply*>(raw), free_reply);
    answered(write_);
    if (r->type == REDIS_REPLY_ERROR)
        return io_error("redis " + url_ + ": SET refused: " + std::string(r->str, r->len));
    if (r->type == REDIS_REPLY_NIL) return false;  // NX on a present key answers nil
    const int64_t replaced = old->type == REDIS_REPLY_INTEGER ? old->integer : 0;
    const std::string delta = std::to_string(int64_t(bytes.size()) - replaced), now = std::to_string(next_use_us()),
                      cap = std::to_string(options_.max_bytes);
    Reply acc(
        static_cast<redisReply*>(redisCommand(write_.ctx, "EVAL %s 3 %b %s %s %s %s %s", kAccountScript, k.data(),
                                              k.size(), kIndexKey, kBytesKey, delta.c_str(), now.c_str(), cap.c_str())),
        free_reply);
    if (!acc) return fail(write_, "EVAL");
    if (acc->type == REDIS_REPLY_ARRAY && acc->elements == 2) {
        std::lock_guard<std::mutex> u(usage_mu_);
        usage_.bytes = acc->element[0]->integer;
        usage_.evictions += acc->element[1]->integer;
    }
    return true;
}

}  // namespace lazyattn::store
