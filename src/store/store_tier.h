// StoreTier: one level of the persistent segment store below the RAM pool (disk, Redis). Entries
// are whole encoded segments (segment_format.h) under their key; a tier never sees inside them.
// get() is called on the inference thread, put() on the store's writer thread: implementations
// are safe for that pair to run at once.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "core/status.h"

namespace lazyattn::store {

// An entry's bytes and whatever keeps them alive (a file mapping, a reply buffer, a vector).
struct Blob {
    std::shared_ptr<const void> owner;
    std::span<const uint8_t> bytes;
};

// How every tier is run (--kv-store-timeout-ms, --kv-store-max-mib).
struct TierOptions {
    // A read (on the inference thread) that takes longer is a miss, and the tier is marked down
    // for a growing back-off, as an unreachable one is. The whole read: connect, request and
    // every byte of the reply (a reply still trickling in at the deadline is cut). Network tiers
    // only.
    double read_timeout_ms = 250;
    // The largest entry a network tier reads or writes: a reply larger than it (and its framing)
    // is cut, the tier marked down as for a deadline; a larger entry is not written. 512 MiB is
    // Redis' own limit on a string (proto-max-bulk-len), so every entry a Redis can hold is read.
    int64_t max_entry_bytes = 512ll << 20;
    // The most bytes of entries a tier holds; a write past it evicts the least recently used
    // entries (down to 90%). 0: unbounded.
    int64_t max_bytes = 4ll << 30;
};

// How the store's writer thread runs (--kv-store-max-pending-mib; segment_store.h).
struct WriterOptions {
    // Bytes of entries (KV copies) queued or being written; a write past it is dropped and
    // counted, and so is an entry larger than it. 0: unbounded (precompute, which flushes each
    // batch, and a batch fits the RAM pool).
    int64_t max_pending_bytes = 256ll << 20;
    // At close or destruction: how long queued writes still get before the one in flight is
    // aborted and the rest dropped.
    double shutdown_drain_s = 1.0;

    Status validate() const;
};

// What a tier holds, as far as this process knows.
struct TierUsage {
    int64_t bytes = 0;      // of entries (all writers' where the tier tracks them together)
    int64_t max_bytes = 0;  // 0: unbounded
    int64_t evictions = 0;  // entries this process evicted
    // Entries this process found gone (a Redis's own maxmemory eviction, a hand's delete) and
    // dropped from the tier's account: never counted as evictions.
    int64_t forgotten = 0;
    // Times this process found the tier's size account broken (garbage in its bookkeeping) or
    // failing (an error from the accounting); each rebuilds the account from the entries present
    // (the first is logged).
    int64_t account_errors = 0;
    // False while the tier is marked down (unreachable, not answering in time, answering garbage),
    // misconfigured (two clusters in one URL), or while its calls keep failing.
    bool up = true;
    // Redis Cluster slots no reachable master serves (a lost node): their entries are computed.
    int64_t unserved_slots = 0;
};

class StoreTier {
public:
    virtual ~StoreTier() = default;
    virtual std::string name() const = 0;   // "disk", "redis"
    virtual std::string where() const = 0;  // the directory or URL (logs, metrics labels)
    // The entry, kNotFound when absent, another error when the tier failed (I/O, unreachable).
    virtual Expected<Blob> get(const std::string& key) = 0;
    virtual Expected<bool> contains(const std::string& key) = 0;
    // Stores the entry whole or not at all (a reader never sees part of it). Without overwrite,
    // an entry already present is kept and false returned; two writers of one key both succeed
    // and either's (identical, or equally valid) bytes remain.
    virtual Expected<bool> put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) = 0;
    virtual TierUsage usage() const = 0;
    // Makes a put() blocked on another thread return soon (failed) and every later one fail at
    // once: the store's writer gives up at shutdown. Any thread. Tiers whose writes cannot be
    // interrupted (a local disk) ignore it.
    virtual void abort_writes() {}
};

// What opening the store does with a tier that cannot be opened or does not answer one lookup at
// start-up (SegmentStore::open probes each tier once, on the connection it then keeps):
// - kKeep: warns and keeps it (a Redis that is down is retried with a growing back-off; serve);
//   a tier that cannot be opened at all (a bad URI, an unusable directory) is an error;
// - kSkip: warns and leaves it out (precompute --unreachable-tier skip);
// - kRefuse: the store does not open (precompute's default, bench store).
enum class UnreachableTiers { kKeep, kSkip, kRefuse };

// A tier found unreachable at start-up.
struct UnreachableTier {
    std::string where;  // the --kv-store value, any password redacted
    Status error;
};
// "--kv-store redis://h:6379 cannot be reached: <error> (is Redis running? ...)".
std::string describe(const UnreachableTier& t);

// Opens a tier from its --kv-store spelling: a directory path, or redis://HOST:PORT[,HOST:PORT...][/DB]
// (a standalone Redis or a Redis Cluster, detected).
Expected<std::unique_ptr<StoreTier>> open_tier(const std::string& uri, const TierOptions& options = {});

}  // namespace lazyattn::store
