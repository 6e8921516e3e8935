// SegmentStore: the persistent tiers below the RAM pool (--kv-store, in the order given: disk
// then Redis, say) and the thread that writes to them.
//
// Reads happen on the inference thread at admission, in place of a prefill: each tier in order,
// the first verified entry wins and its blocks are imported into the pool. A corrupt or foreign
// entry is never used: it is counted, the segment is computed, and the write-through replaces it.
// An entry found in a lower tier is copied up to the tiers above it (off the inference thread).
//
// Writes never happen on the inference thread: the scheduler hands over an exported entry and
// returns; a writer thread seals it (checksum) and puts it in every tier. The queue is bounded in
// bytes (a slow tier drops writes, counted, rather than holding KV copies without end); a write
// that would pass the bound is refused before its copy is made. At shutdown the writer gets a
// short drain, then the write in flight is aborted and the rest dropped (counted, logged), so a
// hung tier cannot hold the process; flush() waits for everything (precompute).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "backend/kv_memory.h"
#include "kv/block_pool.h"
#include "store/segment_format.h"
#include "store/store_tier.h"

namespace lazyattn::store {

struct TierStats {
    std::string name;   // "disk", "redis"
    std::string where;  // directory or URL
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t bytes_read = 0;  // of entries used
    int64_t bytes_written = 0;
    int64_t writes = 0;          // entries stored
    int64_t writes_skipped = 0;  // already present (another writer, or an earlier run)
    int64_t errors = 0;          // failed reads and writes (I/O, unreachable)
    int64_t outages = 0;         // times it started failing (one warning each; over after 5 s of no failure)
    int64_t rejected = 0;        // corrupt or foreign entries found (never used)
    double load_ms = 0;          // total time of hits: read, verify, import
    TierUsage usage;             // bytes held, the cap, evictions, up or marked down
};

struct StoreStats {
    std::vector<TierStats> tiers;
    int64_t writes_dropped = 0;  // the write queue was full, or shutdown left them unwritten
    int64_t writes_pending = 0;
    int64_t bytes_pending = 0;  // of the entries queued or being written
};

// The store as /health reports it: "down" while a tier is marked down (unreachable, not
// answering in time, answering garbage, misconfigured, or failing every call: its lookups are
// computed), "degraded" while a tier serves only part of its entries (cluster slots no node
// serves), else "ok".
const char* store_health(const StoreStats& st);

class SegmentStore {
public:
    // Opens each tier once (see open_tier) and asks it for one key, on the connection it keeps:
    // a tier that cannot be opened or does not answer is warned about and kept, left out or
    // refused, as `unreachable` says (a bad URI or an unusable directory is an error unless
    // skipped). unreachable_at_open() lists them.
    static Expected<std::unique_ptr<SegmentStore>> open(const std::vector<std::string>& uris,
                                                        const WriterOptions& writer = {},
                                                        const TierOptions& options = {},
                                                        UnreachableTiers unreachable = UnreachableTiers::kKeep);
    // Takes ready-made tiers (tests).
    explicit SegmentStore(std::vector<std::unique_ptr<StoreTier>> tiers, const WriterOptions& writer = {});
    // close().
    ~SegmentStore();
    SegmentStore(const SegmentStore&) = delete;
    SegmentStore& operator=(const SegmentStore&) = delete;

    // Looks the segment up tier by tier; on the first verified entry, imports its KV into
    // `blocks` (all of the segment's blocks; the first num_present already hold it) and returns
    // the tier's index. -1 when no tier has a usable entry, or the pool's memory refused the copy
    // (a device error, counted as the tier's error): the caller recomputes the segment.
    int load(const SegmentMeta& meta, backend::KvMemory& kv, std::span<const kv::BlockId> blocks, int32_t num_present);
    // Exports the segment's blocks (a copy, on the caller's thread) and queues the entry for
    // every tier. Returns false when the queue was full or the blocks could not be read (the
    // write is dropped and counted).
    bool write_async(const SegmentMeta& meta, const backend::KvMemory& kv, std::span<const kv::BlockId> blocks);
    // Whether any tier holds an entry under the key (precompute skips those).
    bool contains(const std::string& key);
    // Blocks until every queued write is done (without a deadline).
    void flush();
    // Stops the writer: queued writes get WriterOptions::shutdown_drain_s, then the tiers' writes
    // are aborted (the one in flight fails) and what is left is dropped, counted and logged.
    // Later writes are dropped. Idempotent; stats() still answers.
    void close();

    StoreStats stats() const;
    int32_t num_tiers() const { return int32_t(tiers_.size()); }
    // The tiers open() found unreachable (kept or left out, as it was asked).
    const std::vector<UnreachableTier>& unreachable_at_open() const { return unreachable_at_open_; }

private:
    struct WriteJob {
        std::string key;
        std::shared_ptr<std::vector<uint8_t>> fresh;  // unsealed export
        Blob verified;                                // or a verified entry copied up
        bool overwrite = false;
        int32_t end_tier = 0;  // written to tiers [0, end_tier)
        int64_t bytes = 0;     // counted in pending_bytes_
    };
    bool reserve_locked(int64_t bytes);               // mu_ held: room in the queue, else dropped
    void enqueue_locked(WriteJob job);                // mu_ held, its bytes reserved
    void note_result(size_t tier, const Status& st);  // mu_ held: errors, one warning per outage
    void writer_loop();
    void write_one(WriteJob& job);

    std::vector<std::unique_ptr<StoreTier>> tiers_;
    const WriterOptions options_;
    mutable std::mutex mu_;
    std::condition_variable cv_, idle_cv_;
    std::deque<WriteJob> queue_;
    bool busy_ = false, stop_ = false;
    bool abandon_ = false;          // past the shutdown drain: the job in flight is given up
    std::vector<TierStats> stats_;  // guarded by mu_
    int64_t writes_dropped_ = 0;
    int64_t pending_bytes_ = 0;  // of the queued jobs and the one in flight
    bool oversize_warned_ = false;
    std::unordered_set<std::string> rejected_keys_;                    // entries to overwrite, not keep
    std::vector<bool> failing_;                                        // per tier: in an outage (warned once)
    std::vector<std::chrono::steady_clock::time_point> last_failure_;  // per tier
    std::vector<UnreachableTier> unreachable_at_open_;
    std::thread writer_;
};

}  // namespace lazyattn::store
