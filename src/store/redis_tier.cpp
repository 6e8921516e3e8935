#include "store/redis_tier.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <random>

#include "core/log.h"

namespace lazyattn::store {
namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(1000);
constexpr auto kMaxBackoff = std::chrono::milliseconds(30000);
constexpr auto kRepairInterval = std::chrono::seconds(60);  // after an error reply, not garbage found
constexpr timeval kConnectTimeout{0, 300 * 1000};
constexpr timeval kWriteTimeout{5, 0};  // the writer thread's, for entries of megabytes
constexpr int64_t kAuditEvery = 32;     // accounting runs between checks that the sizes sum up

const char* kIndexKey = "lazyattn:seg:index";  // sorted set: entry key -> last use (us)
const char* kBytesKey = "lazyattn:seg:bytes";  // bytes of the indexed entries
const char* kSizesKey = "lazyattn:seg:sizes";  // hash: entry key -> its bytes
const char* kEntryPattern = "lazyattn:seg:*";

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

// Accounts a written entry KEYS[1] of ARGV[1] bytes, last used ARGV[2], in the index KEYS[2],
// the byte counter KEYS[3] and the size table KEYS[4]. First checks the bookkeeping it reads
// (types, a counter that is a non-negative integer, index and sizes of one length; with
// ARGV[5] = 1 that the sizes sum to the counter): on garbage it deletes the three keys and
// returns {-1, why}; when one of them is gone whole (Redis evicted it) {-2, why}; either way for
// the caller to rebuild them. Then forgets indexed entries that are gone
// (the 8 oldest and 56 more from a rank drawn by ARGV[4] are checked), and past the cap
// ARGV[3] (0: none) deletes the least recently used (never KEYS[1]) down to 90%: an entry already
// gone is forgotten, not evicted. Returns {bytes held, entries evicted, entries forgotten}.
const char* kAccountScript = R"lua(
local entry, index, counter, sizes = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local function kind(k) return redis.call('TYPE', k)['ok'] end
local function count(v) return #v <= 15 and string.match(v, '^%d+$') ~= nil end
local function shown(v) return string.format('%q', string.sub(v, 1, 24)) end
local function broken(why)
  redis.call('DEL', index, counter, sizes)
  return {-1, why}
end
local ti, tc, ts = kind(index), kind(counter), kind(sizes)
if ti ~= 'zset' and ti ~= 'none' then return broken('the index is a ' .. ti) end
if ts ~= 'hash' and ts ~= 'none' then return broken('the size table is a ' .. ts) end
if tc ~= 'string' and tc ~= 'none' then return broken('the byte counter is a ' .. tc) end
local total = 0
if tc == 'string' then
  local v = redis.call('GET', counter)
  if not count(v) then return broken('the byte counter holds ' .. shown(v)) end
  total = tonumber(v)
end
local n, h = redis.call('ZCARD', index), redis.call('HLEN', sizes)
if (n == 0) ~= (h == 0) or (n > 0 and tc == 'none') or (n == 0 and total ~= 0) then
  redis.call('DEL', index, counter, sizes)  -- one of them evicted (allkeys-lru) or deleted whole
  return {-2, 'a bookkeeping key is gone'}
end
if n ~= h then return broken('the index lists ' .. n .. ' entries, the size table ' .. h) end
if ARGV[5] == '1' then
  local sum = 0
  for _, v in ipairs(redis.call('HVALS', sizes)) do
    if not count(v) then return broken('a size is ' .. shown(v)) end
    sum = sum + tonumber(v)
  end
  if sum ~= total then
    return broken(string.format('the byte counter holds %.0f, the sizes sum to %.0f', total, sum))
  end
end
local function size_of(m)
  local v = redis.call('HGET', sizes, m)
  if v and count(v) then return tonumber(v) end
  return nil
end
local old = 0
if redis.call('HEXISTS', sizes, entry) == 1 then old = size_of(entry) end
if old == nil then return broken('a size is garbage') end
total = total - old + tonumber(ARGV[1])
redis.call('HSET', sizes, entry, ARGV[1])
redis.call('ZADD', index, ARGV[2], entry)
local evicted, forgotten = 0, 0
local function forget(m, s)
  redis.call('ZREM', index, m)
  redis.call('HDEL', sizes, m)
  total = total - s
end
local function sweep(from, len)
  for _, m in ipairs(redis.call('ZRANGE', index, from, from + len - 1)) do
    if m ~= entry and redis.call('EXISTS', m) == 0 then
      local s = size_of(m)
      if s == nil then return false end
      forget(m, s)
      forgotten = forgotten + 1
    end
  end
  return true
end
if not sweep(0, 8) then return broken('a size is garbage') end
local rest = redis.call('ZCARD', index) - 8
if rest > 0 then
  local from = tonumber(ARGV[4]) % rest
  if not sweep(8 + from, 56) then return broken('a size is garbage') end
  if from + 56 > rest and not sweep(8, from + 56 - rest) then return broken('a size is garbage') end
end
local cap = tonumber(ARGV[3])
if cap > 0 and total > cap then
  local target = math.floor(cap * 0.9)
  while total > target do
    local oldest = redis.call('ZRANGE', index, 0, 1)
    local victim = oldest[1]
    if victim == entry then victim = oldest[2] end
    if victim == nil then break end
    local s = size_of(victim)
    if s == nil then return broken('a size is garbage') end
    if redis.call('DEL', victim) == 1 then evicted = evicted + 1 else forgotten = forgotten + 1 end
    forget(victim, s)
  end
end
redis.call('SET', counter, string.format('%.0f', total))
return {total, evicted, forgotten}
)lua";

// A hit's use, in the GET's round trip: renews the entry KEYS[1]'s score (ARGV[1]) in the index
// KEYS[2] (and reads the counter KEYS[3] and sizes KEYS[4]), or, when the entry is gone, drops it
// from the account. Returns 1 when it forgot the entry. Changes nothing on bookkeeping it cannot read
// (a write finds and rebuilds it).
const char* kTouchScript = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then
  -- Every bookkeeping key used, so an allkeys-lru Redis finds them recently used, not idle.
  if redis.call('TYPE', KEYS[2])['ok'] == 'zset' then redis.call('ZADD', KEYS[2], 'XX', ARGV[1], KEYS[1]) end
  if redis.call('TYPE', KEYS[3])['ok'] == 'string' then redis.call('GET', KEYS[3]) end
  if redis.call('TYPE', KEYS[4])['ok'] == 'hash' then redis.call('HEXISTS', KEYS[4], KEYS[1]) end
  return 0
end
if redis.call('TYPE', KEYS[2])['ok'] ~= 'zset' or redis.call('TYPE', KEYS[4])['ok'] ~= 'hash' then return 0 end
local s = redis.call('HGET', KEYS[4], KEYS[1])
if not s then return 0 end
redis.call('DECRBY', KEYS[3], s)
redis.call('ZREM', KEYS[2], KEYS[1])
redis.call('HDEL', KEYS[4], KEYS[1])
return 1
)lua";

// The rebuild's step: adopts the string keys ARGV[2..] (found by SCAN) not yet in the size table
// KEYS[3] into the index KEYS[1] (scored by Redis's idle time before ARGV[1], the time now, where
// it tells) and the counter KEYS[2]. Returns how many it adopted.
const char* kAdoptScript = R"lua(
local adopted, bytes = 0, 0
for i = 2, #ARGV do
  local k = ARGV[i]
  if k ~= KEYS[1] and k ~= KEYS[2] and k ~= KEYS[3] and redis.call('TYPE', k)['ok'] == 'string'
     and redis.call('HEXISTS', KEYS[3], k) == 0 then
    local size = redis.call('STRLEN', k)
    local score = tonumber(ARGV[1])
    local idle = redis.pcall('OBJECT', 'IDLETIME', k)
    if type(idle) == 'number' then score = score - idle * 1000000 end
    redis.call('HSET', KEYS[3], k, size)
    redis.call('ZADD', KEYS[1], score, k)
    bytes = bytes + size
    adopted = adopted + 1
  end
end
redis.call('INCRBY', KEYS[2], bytes)
return adopted
)lua";

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
    std::lock_guard<std::mutex> lock(c.fd_mu);  // the socket closes: abort_writes() must not see it
    c.fd = -1;
    if (c.ctx != nullptr) redisFree(c.ctx);
    c.ctx = nullptr;
}

void RedisTier::abort_writes() {
    aborted_ = true;
    std::lock_guard<std::mutex> lock(write_.fd_mu);
    // A blocked send or receive returns at once (an error); the writer then drops the connection.
    if (write_.fd >= 0) ::shutdown(write_.fd, SHUT_RDWR);
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
    {
        std::lock_guard<std::mutex> lock(c.fd_mu);
        if (&c == &write_ && aborted_) {
            redisFree(ctx);
            return unavailable("redis " + url_ + ": writes aborted (shutting down)");
        }
        c.fd = ctx->fd;
    }
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
            static_cast<void>(fail(c, "AUTH"));  // marks it down; the reply says why
            return unavailable("redis " + url_ + ": AUTH failed: " + std::string(r->str, r->len));
        }
    }
    if (address_.db != 0) {
        Reply r(static_cast<redisReply*>(redisCommand(ctx, "SELECT %d", address_.db)), free_reply);
        if (!r) return fail(c, "SELECT");
        if (r->type == REDIS_REPLY_ERROR) {
            static_cast<void>(fail(c, "SELECT"));  // marks it down; the reply says why
            return unavailable("redis " + url_ + ": SELECT failed: " + std::string(r->str, r->len));
        }
    }
    return {};
}

Expected<Blob> RedisTier::get(const std::string& key) {
    std::lock_guard<std::mutex> lock(read_.mu);
    NoSigpipe no_sigpipe;
    LA_RETURN_IF_ERROR(ensure(read_));
    const std::string k = redis_key(key), now = std::to_string(next_use_us());
    // GET, and the entry's use noted (or, gone, forgotten): one round trip.
    redisAppendCommand(read_.ctx, "GET %b", k.data(), k.size());
    redisAppendCommand(read_.ctx, "EVAL %s 4 %b %s %s %s %s", kTouchScript, k.data(), k.size(), kIndexKey, kBytesKey,
                       kSizesKey, now.c_str());
    void* raw = nullptr;
    if (redisGetReply(read_.ctx, &raw) != REDIS_OK || raw == nullptr) return fail(read_, "GET");
    std::shared_ptr<redisReply> reply(static_cast<redisReply*>(raw), free_reply);
    void* touched = nullptr;
    if (redisGetReply(read_.ctx, &touched) != REDIS_OK || touched == nullptr) return fail(read_, "GET");
    const Reply touch(static_cast<redisReply*>(touched), free_reply);
    answered(read_);
    if (touch->type == REDIS_REPLY_INTEGER && touch->integer == 1) {
        std::lock_guard<std::mutex> u(usage_mu_);
        ++usage_.forgotten;
    }
    if (reply->type == REDIS_REPLY_NIL) return not_found("no entry " + key);
    if (reply->type == REDIS_REPLY_ERROR && std::string_view(reply->str, reply->len).rfind("WRONGTYPE", 0) == 0) {
        return Blob{};  // another type where an entry belongs: a corrupt entry (rejected, then replaced)
    }
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
    NoSigpipe no_sigpipe;
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
    if (aborted_) return unavailable("redis " + url_ + ": writes aborted (shutting down)");
    NoSigpipe no_sigpipe;
    LA_RETURN_IF_ERROR(ensure(write_));
    const std::string k = redis_key(key);
    Reply r(static_cast<redisReply*>(
                overwrite ? redisCommand(write_.ctx, "SET %b %b", k.data(), k.size(), bytes.data(), bytes.size())
                          : redisCommand(write_.ctx, "SET %b %b NX", k.data(), k.size(), bytes.data(), bytes.size())),
            free_reply);
    if (!r) return fail(write_, "SET");
    answered(write_);
    if (r->type == REDIS_REPLY_ERROR)
        return io_error("redis " + url_ + ": SET refused: " + std::string(r->str, r->len));
    if (r->type == REDIS_REPLY_NIL) return false;  // NX on a present key answers nil
    LA_RETURN_IF_ERROR(account_locked(k, bytes.size()));
    return true;
}

Status RedisTier::account_locked(const std::string& k, size_t bytes) {
    static thread_local std::minstd_rand sweep_rng{std::random_device{}()};
    const std::string size = std::to_string(bytes), cap = std::to_string(options_.max_bytes);
    const char* audit = num_accounted_++ % kAuditEvery == 0 ? "1" : "0";  // a process' first write too
    for (int attempt = 0;; ++attempt) {
        const std::string now = std::to_string(next_use_us()), offset = std::to_string(sweep_rng());
        Reply r(static_cast<redisReply*>(redisCommand(
                    write_.ctx, "EVAL %s 4 %b %s %s %s %s %s %s %s %s", kAccountScript, k.data(), k.size(), kIndexKey,
                    kBytesKey, kSizesKey, size.c_str(), now.c_str(), cap.c_str(), offset.c_str(), audit)),
                free_reply);
        if (!r) return fail(write_, "EVAL");
        const auto integer = [&r](size_t i) {
            return r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer : int64_t(-1);
        };
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && integer(0) >= 0) {
            std::lock_guard<std::mutex> u(usage_mu_);
            usage_.bytes = integer(0);
            usage_.evictions += std::max<int64_t>(0, integer(1));
            usage_.forgotten += std::max<int64_t>(0, integer(2));
            return {};
        }
        // A bookkeeping key evicted whole (the script reset the rest): rebuilt. Garbage in it
        // (reset too), or an error reply (scripts refused, something unforeseen): counted and
        // rebuilt, after an error reply at most once a minute, as it may come back every write.
        const bool reset = r->type == REDIS_REPLY_ARRAY && r->elements == 2 && (integer(0) == -1 || integer(0) == -2) &&
                           r->element[1]->type == REDIS_REPLY_STRING;
        if (!reset || integer(0) == -1) {
            note_account_error(reset ? std::string(r->element[1]->str, r->element[1]->len)
                               : r->type == REDIS_REPLY_ERROR
                                   ? "the accounting script failed: " + std::string(r->str, r->len)
                                   : "the accounting script answered nonsense");
        }
        const auto t = std::chrono::steady_clock::now();
        if (attempt > 0 || (!reset && t < next_repair_)) return {};
        if (!reset) next_repair_ = t + kRepairInterval;
        LA_RETURN_IF_ERROR(rebuild_account_locked(reset ? std::string(r->element[1]->str, r->element[1]->len)
                                                        : "the accounting script failed"));
    }
}

Status RedisTier::rebuild_account_locked(const std::string& why) {
    Reply del(static_cast<redisReply*>(redisCommand(write_.ctx, "DEL %s %s %s", kIndexKey, kBytesKey, kSizesKey)),
              free_reply);
    if (!del) return fail(write_, "DEL");
    const std::string now = std::to_string(next_use_us());
    std::string cursor = "0";
    int64_t adopted = 0;
    do {
        Reply scan(static_cast<redisReply*>(
                       redisCommand(write_.ctx, "SCAN %s MATCH %s COUNT 1000", cursor.c_str(), kEntryPattern)),
                   free_reply);
        if (!scan) return fail(write_, "SCAN");
        if (scan->type != REDIS_REPLY_ARRAY || scan->elements != 2 || scan->element[0]->type != REDIS_REPLY_STRING ||
            scan->element[1]->type != REDIS_REPLY_ARRAY) {
            note_account_error("the rebuild's SCAN failed" + (scan->type == REDIS_REPLY_ERROR
                                                                  ? ": " + std::string(scan->str, scan->len)
                                                                  : std::string()));
            return {};
        }
        cursor.assign(scan->element[0]->str, scan->element[0]->len);
        const redisReply* keys = scan->element[1];
        if (keys->elements == 0) continue;
        std::vector<const char*> argv = {"EVAL", kAdoptScript, "3", kIndexKey, kBytesKey, kSizesKey, now.c_str()};
        std::vector<size_t> lens;
        for (const char* a : argv) lens.push_back(std::strlen(a));
        for (size_t i = 0; i < keys->elements; ++i) {
            argv.push_back(keys->element[i]->str);
            lens.push_back(keys->element[i]->len);
        }
        Reply r(static_cast<redisReply*>(redisCommandArgv(write_.ctx, int(argv.size()), argv.data(), lens.data())),
                free_reply);
        if (!r) return fail(write_, "EVAL");
        if (r->type != REDIS_REPLY_INTEGER) {
            note_account_error("the rebuild failed" +
                               (r->type == REDIS_REPLY_ERROR ? ": " + std::string(r->str, r->len) : std::string()));
            return {};
        }
        adopted += r->integer;
    } while (cursor != "0");
    log::info("KV store: the Redis tier's size account was rebuilt from the entries present",
              {{"where", url_}, {"why", why}, {"entries", adopted}});
    return {};
}

void RedisTier::note_account_error(const std::string& why) {
    std::lock_guard<std::mutex> lock(usage_mu_);
    if (usage_.account_errors++ == 0) {
        log::warn(
            "KV store: the Redis tier's size account was broken; it is rebuilt from the entries present "
            "(later ones are only counted: lazyattn_kv_store_account_errors_total)",
            {{"where", url_}, {"problem", why}});
    }
}

}  // namespace lazyattn::store
