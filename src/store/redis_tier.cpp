#include "store/redis_tier.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "core/log.h"
#include "store/redis_account_scripts.h"
#include "store/redis_reply.h"

namespace lazyattn::store {
namespace {

constexpr auto kRepairInterval = std::chrono::seconds(60);       // after an error reply, not garbage found
constexpr auto kWriteTimeout = std::chrono::milliseconds(5000);  // the writer's, plus its bytes' time to send
// Read per call beyond the largest entry: a GET's framing and the replies pipelined with it, a
// CLUSTER SLOTS or CLUSTER NODES of a large cluster.
constexpr int64_t kReplyFraming = 1 << 20;
constexpr int64_t kAuditEvery = 32;  // accounting runs between checks that the sizes sum up
constexpr size_t kMaxUnaccounted = 4096;
constexpr size_t kRetriesPerWrite = 8;

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

// Bucket b's hash tag: "b<j>" for the first j whose slot lies in the b-th of kClusterBuckets
// equal parts of the slot space, so the buckets spread over the masters as evenly as the slots.
std::string bucket_tag(int b) {
    const int lo = b * kNumSlots / kClusterBuckets, hi = (b + 1) * kNumSlots / kClusterBuckets;
    for (int j = 0;; ++j) {
        std::string tag = "b" + std::to_string(j);
        const int slot = key_slot(tag);
        if (slot >= lo && slot < hi) return tag;
    }
}

RedisCallLimits call_limits(const TierOptions& options) {
    RedisCallLimits limits;
    limits.read_deadline = std::chrono::milliseconds(int64_t(std::ceil(std::max(1.0, options.read_timeout_ms))));
    limits.write_deadline = kWriteTimeout;
    limits.max_reply_bytes = std::max<int64_t>(0, options.max_entry_bytes) + kReplyFraming;
    return limits;
}

}  // namespace

RedisTier::RedisTier(RedisAddress address, const std::string& url, const TierOptions& options)
    : url_(redact_redis_url(url)),
      options_(options),
      router_(std::move(address), url_, call_limits(options), [this](Mode mode) { use_mode(mode); }) {
    usage_.max_bytes = options.max_bytes;
}

RedisTier::~RedisTier() = default;

TierUsage RedisTier::usage() const {
    TierUsage u;
    {
        std::lock_guard<std::mutex> lock(usage_mu_);
        u = usage_;
    }
    const RedisRouter::Health health = router_.health();
    u.up = failed_calls_.load() < kFailedCallsBeforeDown && health.nodes_up;
    u.unserved_slots = health.unserved_slots;
    return u;
}

void RedisTier::abort_writes() {
    aborted_ = true;
    router_.abort_writes();
}

void RedisTier::use_mode(Mode mode) {
    if (mode == Mode::kStandalone) {
        buckets_ = {Bucket{"lazyattn:seg:", "lazyattn:seg:index", "lazyattn:seg:bytes", "lazyattn:seg:sizes", 0}};
    } else {
        buckets_.clear();
        for (int b = 0; b < kClusterBuckets; ++b) {
            const std::string prefix = "lazyattn:seg:{" + bucket_tag(b) + "}:";
            buckets_.push_back({prefix, prefix + "index", prefix + "bytes", prefix + "sizes", key_slot(prefix)});
        }
    }
    std::lock_guard<std::mutex> u(usage_mu_);
    bucket_bytes_.assign(buckets_.size(), 0);
}

std::string RedisTier::entry_key(const std::string& key) const {
    if (router_.mode() == Mode::kUnknown) return "";
    return buckets_[size_t(bucket_of(key))].prefix + key;
}

int RedisTier::bucket_of(const std::string& key) const {
    return buckets_.size() == 1 ? 0 : int(crc16(key) % buckets_.size());
}

Status RedisTier::reply_error(const char* what, const redisReply* r) const {
    return io_error("redis " + url_ + ": " + what + " answered " +
                    (is_error_reply(r) ? std::string(reply_text(r)) : std::string("an unexpected reply")));
}

void RedisTier::note_call(const Status& st) {
    if (st.ok() || st.code() == StatusCode::kNotFound) {
        failed_calls_ = 0;
    } else if (int n = failed_calls_.load(); st.code() != StatusCode::kUnavailable && n < kFailedCallsBeforeDown) {
        failed_calls_.compare_exchange_strong(n, n + 1);
    }
}

Expected<Blob> RedisTier::get(const std::string& key) {
    Expected<Blob> got = fetch(key);
    note_call(got.status());
    return got;
}

Expected<bool> RedisTier::contains(const std::string& key) {
    Expected<bool> got = probe(key);
    note_call(got.status());
    return got;
}

Expected<bool> RedisTier::put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) {
    if (int64_t(bytes.size()) > options_.max_entry_bytes) {  // could never be read back
        return out_of_range("redis " + url_ + ": an entry of " + std::to_string(bytes.size()) +
                            " bytes is larger than the tier's largest (" + std::to_string(options_.max_entry_bytes) +
                            ")");
    }
    Expected<bool> put = store(key, bytes, overwrite);
    note_call(put.status());
    return put;
}

Expected<Blob> RedisTier::fetch(const std::string& key) {
    if (router_.mode() == Mode::kUnknown) LA_RETURN_IF_ERROR(router_.discover(Role::kRead));
    const Bucket& b = buckets_[size_t(bucket_of(key))];
    const std::string k = b.prefix + key, now = std::to_string(next_use_us());
    // GET, and the entry's use noted (or, gone, forgotten): one round trip. The note is best
    // effort (a slot in migration may refuse it).
    std::vector<RedisReplyPtr> r;
    LA_RETURN_IF_ERROR(router_.run(Role::kRead, b.slot,
                                   {{"GET", k}, {"EVAL", kTouchScript, "4", k, b.index, b.bytes, b.sizes, now}}, &r));
    if (r[1]->type == REDIS_REPLY_INTEGER && r[1]->integer == 1) {
        std::lock_guard<std::mutex> u(usage_mu_);
        ++usage_.forgotten;
    }
    RedisReplyPtr reply = r[0];
    if (reply->type == REDIS_REPLY_NIL) return not_found("no entry " + key);
    if (is_error_reply(reply.get(), "WRONGTYPE")) {
        return Blob{};  // another type where an entry belongs: a corrupt entry (rejected, then replaced)
    }
    if (reply->type != REDIS_REPLY_STRING) return reply_error("GET", reply.get());
    Blob blob;
    blob.bytes = {reinterpret_cast<const uint8_t*>(reply->str), reply->len};
    blob.owner = std::move(reply);
    return blob;
}

Expected<bool> RedisTier::probe(const std::string& key) {
    if (router_.mode() == Mode::kUnknown) LA_RETURN_IF_ERROR(router_.discover(Role::kRead));
    const Bucket& b = buckets_[size_t(bucket_of(key))];
    const std::string k = b.prefix + key;
    std::vector<RedisReplyPtr> r;
    LA_RETURN_IF_ERROR(router_.run(Role::kRead, b.slot, {{"EXISTS", k}}, &r));
    if (r[0]->type != REDIS_REPLY_INTEGER) return reply_error("EXISTS", r[0].get());
    return r[0]->integer > 0;
}

Expected<bool> RedisTier::store(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (aborted_) return unavailable("redis " + url_ + ": writes aborted (shutting down)");
    if (router_.mode() == Mode::kUnknown) LA_RETURN_IF_ERROR(router_.discover(Role::kWrite));
    // Accounts a migration put off, oldest first.
    for (size_t i = 0; i < kRetriesPerWrite && !unaccounted_.empty(); ++i) {
        Unaccounted u = std::move(unaccounted_.front());
        unaccounted_.pop_front();
        bool retry = false;
        if (!account_locked(u.bucket, u.redis_key, u.bytes, &retry).ok() || retry) {
            unaccounted_.push_back(std::move(u));
            break;
        }
    }
    const int bucket = bucket_of(key);
    const Bucket& b = buckets_[size_t(bucket)];
    const std::string k = b.prefix + key;
    const std::string_view value(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    std::vector<RedisReplyPtr> r;
    LA_RETURN_IF_ERROR(router_.run(Role::kWrite, b.slot,
                                   {overwrite ? RedisArgv{"SET", k, value} : RedisArgv{"SET", k, value, "NX"}}, &r));
    if (is_error_reply(r[0].get()))
        return io_error("redis " + url_ + ": SET refused: " + std::string(reply_text(r[0].get())));
    if (r[0]->type == REDIS_REPLY_NIL) return false;  // NX on a present key answers nil
    bool retry = false;
    LA_RETURN_IF_ERROR(account_locked(bucket, k, bytes.size(), &retry));
    if (retry) {
        if (unaccounted_.size() >= kMaxUnaccounted) unaccounted_.pop_front();  // a rebuild adopts it
        unaccounted_.push_back({bucket, k, bytes.size()});
    }
    return true;
}

Status RedisTier::account_locked(int bucket, const std::string& k, size_t bytes, bool* retry) {
    static thread_local std::minstd_rand sweep_rng{std::random_device{}()};
    const Bucket& b = buckets_[size_t(bucket)];
    const int64_t cap_bytes =
        options_.max_bytes > 0 ? std::max<int64_t>(1, options_.max_bytes / int64_t(buckets_.size())) : 0;
    const std::string size = std::to_string(bytes), cap = std::to_string(cap_bytes);
    const char* audit = num_accounted_++ % kAuditEvery == 0 ? "1" : "0";  // a process' first write too
    const char* known = "0";  // this process saw the bucket hold bytes: all of it empty is then evicted
    {
        std::lock_guard<std::mutex> u(usage_mu_);
        if (bucket_bytes_[size_t(bucket)] > 0) known = "1";
    }
    for (int attempt = 0;; ++attempt) {
        const std::string now = std::to_string(next_use_us()), offset = std::to_string(sweep_rng());
        std::vector<RedisReplyPtr> replies;
        const Status st = router_.run(
            Role::kWrite, b.slot,
            {{"EVAL", kAccountScript, "4", k, b.index, b.bytes, b.sizes, size, now, cap, offset, audit, "0", known}},
            &replies,
            /*asking_arg=*/12);  // ARGV[6]
        if (st.code() == StatusCode::kUnavailable) return st;
        const redisReply* r = st.ok() ? replies[0].get() : nullptr;
        // A slot in migration (keys split between two nodes), redirected twice, or a cluster
        // that is down: the entry stands; its account is retried by a later write.
        if (!st.ok() || is_error_reply(r, "TRYAGAIN") || is_error_reply(r, "CLUSTERDOWN") || is_error_reply(r, "ASK") ||
            is_error_reply(r, "MOVED")) {
            *retry = true;
            return {};
        }
        const auto integer = [r](size_t i) {
            return r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer : int64_t(-1);
        };
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && integer(0) >= 0) {
            std::lock_guard<std::mutex> u(usage_mu_);
            bucket_bytes_[size_t(bucket)] = integer(0);
            usage_.bytes = std::accumulate(bucket_bytes_.begin(), bucket_bytes_.end(), int64_t(0));
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
            note_account_error(reset               ? std::string(reply_text(r->element[1]))
                               : is_error_reply(r) ? "the accounting script failed: " + std::string(reply_text(r))
                                                   : "the accounting script answered nonsense");
        }
        const auto t = std::chrono::steady_clock::now();
        if (attempt > 0 || (!reset && t < next_repair_)) return {};
        if (!reset) next_repair_ = t + kRepairInterval;
        LA_RETURN_IF_ERROR(rebuild_account_locked(
            bucket, reset ? std::string(reply_text(r->element[1])) : "the accounting script failed"));
    }
}

Status RedisTier::rebuild_account_locked(int bucket, const std::string& why) {
    const Bucket& b = buckets_[size_t(bucket)];
    std::vector<RedisReplyPtr> r;
    LA_RETURN_IF_ERROR(router_.run(Role::kWrite, b.slot, {{"DEL", b.index, b.bytes, b.sizes}}, &r));
    const std::string now = std::to_string(next_use_us()), pattern = b.prefix + "*";
    std::string cursor = "0";
    int64_t adopted = 0;
    do {
        std::vector<RedisReplyPtr> scan;
        LA_RETURN_IF_ERROR(
            router_.run(Role::kWrite, b.slot, {{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}}, &scan));
        const redisReply* s = scan[0].get();
        if (s->type != REDIS_REPLY_ARRAY || s->elements != 2 || s->element[0]->type != REDIS_REPLY_STRING ||
            s->element[1]->type != REDIS_REPLY_ARRAY) {
            note_account_error("the rebuild's SCAN failed" +
                               (is_error_reply(s) ? ": " + std::string(reply_text(s)) : std::string()));
            return {};
        }
        cursor = std::string(reply_text(s->element[0]));
        const redisReply* keys = s->element[1];
        if (keys->elements == 0) continue;
        RedisArgv adopt = {"EVAL", kAdoptScript, "3", b.index, b.bytes, b.sizes, now};
        for (size_t i = 0; i < keys->elements; ++i) adopt.push_back(reply_text(keys->element[i]));
        std::vector<RedisReplyPtr> a;
        LA_RETURN_IF_ERROR(router_.run(Role::kWrite, b.slot, {adopt}, &a));
        if (a[0]->type != REDIS_REPLY_INTEGER) {
            note_account_error("the rebuild failed" + (is_error_reply(a[0].get())
                                                           ? ": " + std::string(reply_text(a[0].get()))
                                                           : std::string()));
            return {};
        }
        adopted += a[0]->integer;
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
