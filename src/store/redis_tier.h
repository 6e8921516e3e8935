// RedisTier (--kv-store redis://HOST:PORT[,HOST:PORT...][/DB]): entries as Redis strings, written
// with one SET (NX unless overwriting), so a reader never sees part of an entry and two replicas
// writing one segment both succeed (the first stays). The nodes, the mode (standalone or
// cluster) and each call's route are RedisRouter's (redis_router.h); this class keeps the
// entries' keys and the size account:
// - standalone: entries under "lazyattn:seg:<key>" and one account (below), as before clusters.
// - cluster: entries under "lazyattn:seg:{<tag>}:<key>", the tag one of kClusterBuckets bucket
//   tags (picked so the buckets' slots spread evenly over the slot space).
// usage().up is false while a node is marked down, the URL is misconfigured, or the last
// kFailedCallsBeforeDown calls all failed (a node that answers, but garbage).
//
// Size cap (TierOptions::max_bytes): every entry this tier writes is listed in a sorted set
// (scored by last use in unix microseconds), its size kept in a hash and summed in a byte
// counter, all updated by one script that runs atomically in Redis, so replicas sharing Redis
// keep one account; a write past the cap evicts the least recently used entries down to 90%. A
// hit renews its entry's score (pipelined with the GET). On a cluster the account is split into
// kClusterBuckets buckets, each bucket's three bookkeeping keys sharing its entries' hash tag (one
// slot, one node), so each write's script stays atomic on one node; each bucket holds
// max_bytes / kClusterBuckets (LRU within a bucket; keys spread evenly over the buckets).
// Redis may drop entries itself (maxmemory with an LRU policy, a hand's DEL): each write sweeps
// part of the index and a GET that finds an indexed entry gone drops it from the account
// ("forgotten", never counted as an eviction), so the account follows what Redis holds.
// The script checks the bookkeeping it reads (key types, a counter that is a non-negative
// integer, index and sizes of one length, and now and then that the sizes sum to the counter);
// garbage there is counted (account_errors), logged once, and the bucket's account rebuilt from
// the entries present (SCAN, on the writer thread), which also adopts entries written before it.
// A write whose account meets a slot in migration (TRYAGAIN) stands; its accounting is retried
// by later writes.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <vector>

#include "store/redis_router.h"
#include "store/redis_url.h"
#include "store/store_tier.h"

namespace lazyattn::store {

constexpr int kClusterBuckets = 64;
constexpr int kFailedCallsBeforeDown = 3;

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
    void abort_writes() override;  // shuts every node's write connection down

    // After the first call that reached a node: whether it is a cluster (tests, stats).
    bool is_cluster() const { return router_.mode() == Mode::kCluster; }
    // The Redis key of an entry once the mode is known ("" before).
    std::string entry_key(const std::string& key) const;
    // The nodes this tier knows (and may hold connections to): seeds, masters, strays.
    size_t num_nodes() const { return router_.num_nodes(); }

private:
    using Mode = RedisRouter::Mode;
    using Role = RedisRouter::Role;
    struct Bucket {
        std::string prefix;  // of its entries' keys
        std::string index, bytes, sizes;
        int slot = 0;
    };
    struct Unaccounted {
        int bucket = 0;
        std::string redis_key;
        size_t bytes = 0;
    };

    // Lays the buckets out for `mode` (the router calls it once, before any call sees the mode).
    void use_mode(Mode mode);
    int bucket_of(const std::string& key) const;
    Status reply_error(const char* what, const redisReply* r) const;
    // Counts a call's outcome towards up: a failure while every node looks fine (garbage
    // answers, redirection loops) counts; a miss, a node marked down and a gap are shown otherwise.
    void note_call(const Status& st);
    Expected<Blob> fetch(const std::string& key);
    Expected<bool> probe(const std::string& key);
    Expected<bool> store(const std::string& key, std::span<const uint8_t> bytes, bool overwrite);

    // Runs the accounting script for a written entry (write_mu_ held); a broken account is
    // rebuilt and the script run again. *retry: the slot is migrating, try again later.
    Status account_locked(int bucket, const std::string& redis_key, size_t bytes, bool* retry);
    Status rebuild_account_locked(int bucket, const std::string& why);  // write_mu_ held
    void note_account_error(const std::string& why);                    // counted; the first one logged

    std::string url_;
    TierOptions options_;
    std::vector<Bucket> buckets_;       // set once, by use_mode
    std::atomic<int> failed_calls_{0};  // in a row; reset by a call that worked
    RedisRouter router_;                // after buckets_: its on_mode writes them

    mutable std::mutex usage_mu_;
    TierUsage usage_;                    // under usage_mu_ (bytes: the buckets' sum)
    std::vector<int64_t> bucket_bytes_;  // under usage_mu_: as the last script on each counted

    std::mutex write_mu_;  // the writer's calls: the account's state below
    std::atomic<bool> aborted_{false};
    int64_t num_accounted_ = 0;                            // accounting runs, for the periodic audit
    std::chrono::steady_clock::time_point next_repair_{};  // after an error reply
    std::deque<Unaccounted> unaccounted_;                  // accounts a migration put off
};

}  // namespace lazyattn::store
