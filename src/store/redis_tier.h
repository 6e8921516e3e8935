// RedisTier (--kv-store redis://HOST:PORT[,HOST:PORT...][/DB]): entries as Redis strings, written
// with one SET (NX unless overwriting), so a reader never sees part of an entry and two replicas
// writing one segment both succeed (the first stays). On a standalone Redis or a Redis Cluster,
// detected at the first call (CLUSTER SLOTS; a standalone answers that cluster support is
// disabled), never configured twice:
// - standalone: entries under "lazyattn:seg:<key>" and one account (below), as before clusters.
// - cluster: entries under "lazyattn:seg:{<tag>}:<key>", the tag one of kClusterBuckets bucket
//   tags (picked so the buckets' slots spread evenly over the slot space); each key is routed
//   to the master serving its slot (redis_slots.h), a MOVED updates the map (and re-reads it, at
//   most every 100 ms) and is retried once, an ASK is followed with ASKING. A slot the map
//   leaves unserved, a CLUSTERDOWN or TRYAGAIN answer is a failed call (counted), never a wait.
// Each node has its own read and write connections, deadlines and back-off (redis_node.h): a
// node that is down, hung or answering garbage costs one deadline per back-off, and only for its
// own slots. The node table holds the seeds, the map's masters and at most kMaxStrayNodes others
// (redirection targets the map does not name yet); each map read drops the rest, closing their
// connections, so a node that names endless endpoints cannot make this process open endless
// sockets. A master the map lists without an address (lost) leaves its slots a gap; a seed that
// serves no slots (a node that came back empty, with another identity) is not taken for a node of
// another cluster.
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
#include <memory>
#include <mutex>
#include <vector>

#include "store/redis_node.h"
#include "store/redis_url.h"
#include "store/store_tier.h"

namespace lazyattn::store {

constexpr int kClusterBuckets = 64;
constexpr size_t kMaxStrayNodes = 16;
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
    bool is_cluster() const { return mode_.load() == Mode::kCluster; }
    // The Redis key of an entry once the mode is known ("" before).
    std::string entry_key(const std::string& key) const;
    // The nodes this tier knows (and may hold connections to): seeds, masters, strays.
    size_t num_nodes() const;

private:
    enum class Mode { kUnknown, kStandalone, kCluster };
    using Role = RedisNode::Role;
    using NodePtr = std::shared_ptr<RedisNode>;  // a call in flight keeps a dropped node alive
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

    int bucket_of(const std::string& key) const;
    // The node serving a slot: discovers the mode first, and re-reads the map on a gap.
    Expected<NodePtr> node_for(Role role, int slot);
    NodePtr node_at(const RedisEndpoint& e);  // map_mu_ held: found or made (nullptr: too many)
    NodePtr make_node(const RedisEndpoint& e) const;
    // A seed outside the map's cluster: a configuration error unless it serves no slots at all.
    Status check_stranger(Role role, RedisNode& node, const RedisEndpoint& seed, const RedisEndpoint& source);
    Status discover(Role role);
    // Checks the seeds against `map` (read from `source`), then routes by it.
    Status use_cluster(Role role, const SlotMap& map, const RedisEndpoint& source);
    Status check_seeds(Role role, const SlotMap& map, const RedisEndpoint& source);
    // Re-reads the slot map (at most every `min_interval`), from `first` when given, else any node
    // not marked down.
    void refresh_map(Role role, RedisNode* first, std::chrono::milliseconds min_interval);
    void install_map_locked(const SlotMap& map);  // map_mu_ held; drops nodes it no longer needs
    // Runs `commands` for keys of `slot` on the node serving it; follows one MOVED or ASK (decided
    // by the first command's reply; sent after ASKING, the first command's word `asking_arg`, when
    // given, becomes "1"). Error replies other than redirections are left to the caller.
    Status run(Role role, int slot, const std::vector<RedisArgv>& commands, std::vector<RedisReplyPtr>* replies,
               int asking_arg = -1);
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

    RedisAddress address_;
    std::string url_;
    TierOptions options_;
    RedisCallLimits limits_;

    mutable std::mutex map_mu_;
    std::atomic<Mode> mode_{Mode::kUnknown};
    std::vector<Bucket> buckets_;  // set once with the mode (under map_mu_)
    std::vector<NodePtr> nodes_;   // under map_mu_: the seeds first, then the map's masters, then strays
    size_t mapped_nodes_ = 0;      // under map_mu_: nodes_ before the strays
    std::vector<NodePtr> owner_;   // under map_mu_: per slot; nullptr: a gap
    int64_t unserved_slots_ = 0;   // under map_mu_: owner_'s gaps (usage() runs every engine step)
    std::chrono::steady_clock::time_point last_refresh_{}, next_discovery_{};  // under map_mu_
    Status discovery_error_;                                                   // under map_mu_
    std::mutex discover_mu_;                                                   // one discovery at a time
    std::atomic<int> failed_calls_{0};                                         // in a row; reset by a call that worked

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
