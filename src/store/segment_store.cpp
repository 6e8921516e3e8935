#include "store/segment_store.h"

#include <chrono>

#include "core/log.h"
#include "core/timer.h"
#include "store/redis_url.h"
#include "store/segment_blocks.h"

namespace lazyattn::store {
namespace {

constexpr auto kOutageQuiet = std::chrono::seconds(5);

}  // namespace

const char* store_health(const StoreStats& st) {
    const char* health = "ok";
    for (const TierStats& t : st.tiers) {
        if (!t.usage.up) return "down";
        if (t.usage.unserved_slots > 0) health = "degraded";
    }
    return health;
}

Expected<std::unique_ptr<SegmentStore>> SegmentStore::open(const std::vector<std::string>& uris,
                                                           const WriterOptions& writer, const TierOptions& options,
                                                           UnreachableTiers unreachable) {
    LA_RETURN_IF_ERROR(writer.validate());
    std::vector<std::unique_ptr<StoreTier>> tiers;
    std::vector<UnreachableTier> down;
    for (const std::string& uri : uris) {
        const std::string where = uri.rfind("redis://", 0) == 0 ? redact_redis_url(uri) : uri;
        auto tier = open_tier(uri, options);
        if (!tier.ok()) {
            if (unreachable != UnreachableTiers::kSkip) return tier.status();
            down.push_back({where, tier.status()});
            continue;
        }
        // Absent is the expected answer; an error is a tier that does not answer. The lookup
        // connects the tier (a Redis node's read connection), which it then keeps: one
        // connection at start-up, reported now rather than at the first request.
        if (const Expected<bool> probe = (*tier)->contains(std::string(64, '0')); !probe.ok()) {
            down.push_back({where, probe.status()});
            if (unreachable == UnreachableTiers::kRefuse) return unavailable(describe(down.back()));
            if (unreachable == UnreachableTiers::kSkip) continue;
        }
        tiers.push_back(std::move(*tier));
    }
    for (const UnreachableTier& t : down) {
        log::warn(describe(t) + (unreachable == UnreachableTiers::kSkip
                                     ? "; skipped (--unreachable-tier skip)"
                                     : "; going on without it (it is retried with a growing back-off)"));
    }
    if (tiers.empty() && !uris.empty()) return unavailable("no --kv-store tier can be reached");
    auto store = std::make_unique<SegmentStore>(std::move(tiers), writer);
    store->unreachable_at_open_ = std::move(down);
    return store;
}

SegmentStore::SegmentStore(std::vector<std::unique_ptr<StoreTier>> tiers, const WriterOptions& writer)
    : tiers_(std::move(tiers)), options_(writer) {
    for (const auto& t : tiers_) {
        TierStats s;
        s.name = t->name();
        s.where = t->where();
        stats_.push_back(s);
    }
    failing_.assign(tiers_.size(), false);
    last_failure_.assign(tiers_.size(), {});
    writer_ = std::thread([this] { writer_loop(); });
}

SegmentStore::~SegmentStore() { close(); }

void SegmentStore::close() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!writer_.joinable()) return;
    stop_ = true;
    cv_.notify_all();
    const auto drain = std::chrono::duration<double>(options_.shutdown_drain_s);
    if (!idle_cv_.wait_for(lock, drain, [this] { return queue_.empty() && !busy_; })) {
        const int64_t queued = int64_t(queue_.size());
        for (const WriteJob& job : queue_) pending_bytes_ -= job.bytes;
        queue_.clear();
        writes_dropped_ += queued;  // the one in flight is counted by the writer if it fails
        abandon_ = true;
        log::warn("KV store writes dropped at shutdown: the tiers did not take them in time",
                  {{"queued", queued}, {"in_flight", busy_ ? 1 : 0}, {"drain_s", options_.shutdown_drain_s}});
        lock.unlock();
        for (auto& t : tiers_) t->abort_writes();
    } else {
        lock.unlock();
    }
    writer_.join();
}

void SegmentStore::note_result(size_t tier, const Status& st) {
    // One warning per outage. An outage ends once the tier has worked for kOutageQuiet with no
    // failure: a cluster node that is down fails only its own keys, so successes interleave with
    // failures all through it, and a note per success would flap once per document.
    const bool failed = !st.ok() && st.code() != StatusCode::kNotFound;
    const auto now = std::chrono::steady_clock::now();
    if (failed) {
        if (!failing_[tier]) {
            log::warn("KV store tier failing; segments are computed instead",
                      {{"tier", tiers_[tier]->name()}, {"where", tiers_[tier]->where()}, {"error", st.to_string()}});
            ++stats_[tier].outages;
            failing_[tier] = true;
        }
        last_failure_[tier] = now;
        ++stats_[tier].errors;
    } else if (failing_[tier] && now - last_failure_[tier] >= kOutageQuiet) {
        log::info("KV store tier working again", {{"tier", tiers_[tier]->name()}, {"where", tiers_[tier]->where()}});
        failing_[tier] = false;
    }
}

int SegmentStore::load(const SegmentMeta& meta, backend::KvMemory& kv, std::span<const kv::BlockId> blocks,
                       int32_t num_present) {
    const std::string key = segment_key(meta);
    for (size_t t = 0; t < tiers_.size(); ++t) {
        const double t0 = now_ms();
        auto blob = tiers_[t]->get(key);
        std::lock_guard<std::mutex> lock(mu_);
        note_result(t, blob.status());
        if (!blob.ok()) {
            ++stats_[t].misses;
            continue;
        }
        auto data = verify_segment(blob->bytes, meta);
        if (!data.ok()) {
            ++stats_[t].misses;
            ++stats_[t].rejected;
            rejected_keys_.insert(key);
            log::warn("KV store entry rejected; the segment is recomputed and the entry replaced",
                      {{"tier", tiers_[t]->name()}, {"key", key}, {"error", data.status().to_string()}});
            continue;
        }
        if (Status st = import_segment_blocks(kv, blocks, *data, num_present); !st.ok()) {
            // The entry is fine; the pool's memory refused it (a device error): recompute.
            ++stats_[t].misses;
            ++stats_[t].errors;
            log::warn("KV store entry could not be copied into the pool; the segment is recomputed",
                      {{"tier", tiers_[t]->name()}, {"key", key}, {"error", st.to_string()}});
            return -1;
        }
        ++stats_[t].hits;
        stats_[t].bytes_read += int64_t(blob->bytes.size());
        stats_[t].load_ms += now_ms() - t0;
        if (t > 0) {
            // Copied up, so the faster tiers hold it next time (the writer re-checks presence).
            WriteJob job;
            job.key = key;
            job.verified = std::move(blob).value();
            job.overwrite = rejected_keys_.count(key) > 0;
            job.end_tier = int32_t(t);
            job.bytes = int64_t(job.verified.bytes.size());
            if (reserve_locked(job.bytes)) enqueue_locked(std::move(job));
        }
        return int(t);
    }
    return -1;
}

bool SegmentStore::write_async(const SegmentMeta& meta, const backend::KvMemory& kv,
                               std::span<const kv::BlockId> blocks) {
    if (tiers_.empty()) return true;
    WriteJob job;
    job.key = segment_key(meta);
    job.bytes = int64_t(segment_total_bytes(meta));
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (!reserve_locked(job.bytes)) return false;  // before the copy: nothing is allocated
    }
    job.fresh = std::make_shared<std::vector<uint8_t>>(begin_segment(meta));
    if (Status st = export_segment_blocks(kv, blocks, int32_t(meta.tokens.size()), data_of(*job.fresh, meta));
        !st.ok()) {
        log::warn("KV store write skipped: the pool's blocks could not be read", {{"error", st.to_string()}});
        std::lock_guard<std::mutex> lock(mu_);
        pending_bytes_ -= job.bytes;
        ++writes_dropped_;
        return false;
    }
    job.end_tier = int32_t(tiers_.size());
    std::lock_guard<std::mutex> lock(mu_);
    job.overwrite = rejected_keys_.count(job.key) > 0;
    enqueue_locked(std::move(job));
    return true;
}

bool SegmentStore::reserve_locked(int64_t bytes) {
    const int64_t max = options_.max_pending_bytes;
    if (stop_ || (max > 0 && pending_bytes_ + bytes > max)) {
        ++writes_dropped_;
        if (max > 0 && bytes > max && !oversize_warned_) {
            oversize_warned_ = true;
            log::warn(
                "KV store entry larger than the writer's queue (--kv-store-max-pending-mib): such documents "
                "are never stored",
                {{"entry_bytes", bytes}, {"max_pending_bytes", max}});
        }
        return false;
    }
    pending_bytes_ += bytes;
    return true;
}

void SegmentStore::enqueue_locked(WriteJob job) {
    queue_.push_back(std::move(job));
    cv_.notify_one();
}

bool SegmentStore::contains(const std::string& key) {
    for (size_t t = 0; t < tiers_.size(); ++t) {
        auto has = tiers_[t]->contains(key);
        std::lock_guard<std::mutex> lock(mu_);
        note_result(t, has.status());
        if (has.ok() && *has) return true;
    }
    return false;
}

void SegmentStore::flush() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void SegmentStore::writer_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) break;  // stop_ and nothing left to write
        WriteJob job = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        write_one(job);
        lock.lock();
        pending_bytes_ -= job.bytes;
        busy_ = false;
        if (queue_.empty()) idle_cv_.notify_all();
    }
    idle_cv_.notify_all();
}

void SegmentStore::write_one(WriteJob& job) {
    std::span<const uint8_t> bytes = job.verified.bytes;
    if (job.fresh) {
        seal_segment(*job.fresh);
        bytes = *job.fresh;
    }
    bool whole = true;  // in every tier it was meant for
    for (int32_t t = 0; t < job.end_tier; ++t) {
        auto put = tiers_[t]->put(job.key, bytes, job.overwrite);
        std::lock_guard<std::mutex> lock(mu_);
        if (abandon_) {  // aborted at shutdown: a drop, not the tier's error
            whole = whole && put.ok();
            if (!whole) break;
        }
        note_result(size_t(t), put.status());
        if (!put.ok()) continue;
        if (*put) {
            ++stats_[t].writes;
            stats_[t].bytes_written += int64_t(bytes.size());
        } else {
            ++stats_[t].writes_skipped;
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!whole) ++writes_dropped_;
    if (job.overwrite) rejected_keys_.erase(job.key);
}

StoreStats SegmentStore::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    StoreStats s;
    s.tiers = stats_;
    for (size_t t = 0; t < tiers_.size(); ++t) s.tiers[t].usage = tiers_[t]->usage();
    s.writes_dropped = writes_dropped_;
    s.writes_pending = int64_t(queue_.size()) + (busy_ ? 1 : 0);
    s.bytes_pending = pending_bytes_;
    return s;
}

}  // namespace lazyattn::store
