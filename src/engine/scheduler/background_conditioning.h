// BackgroundConditioning: which neighbour-conditioned copies the engine makes on its own, and
// when (the `balanced` preset). A request reading documents with neighbours=K@ready takes a
// document's conditioned copy where one exists and its plain copy otherwise; each document it
// read plain is a sighting here. Once a tenant's document has been seen in `condition_after`
// requests, its copy is queued as background work: a segment job the Scheduler runs only in the
// step budget requests leave unused, cancels when a waiting request needs its blocks, and which
// publishes the copy to RAM and the store tiers like any conditioned job (KvManager::
// start_background_job).
//
// Policy only: no blocks, no model. Bounded in memory and in work: sightings are remembered for
// at most max_tracked documents (the oldest forgotten first: a forgotten document starts
// counting again), and the queue holds at most max_queued tasks in all and
// max_queued_per_account for one API key (tenant_account: all its cache_salts together), so one
// key's flood neither grows the queue without bound nor keeps another key's documents out past
// its own share. A task belongs to the tenant whose requests read the document: its neighbours
// come from that tenant's index and its copy is keyed under that tenant, so no tenant can make
// the engine condition (or read) another's documents.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace lazyattn::engine {

struct BackgroundLimits {
    int32_t condition_after = 0;  // sightings before a copy is made; 0: never (the `fast` preset)
    int32_t max_queued = 256;     // tasks queued over every tenant
    int32_t max_queued_per_account = 16;
    int32_t max_tracked = 65536;  // documents whose sightings are counted
};

// One conditioned copy to make: `tokens` of `tenant`, conditioned on `neighbours` neighbours.
struct BackgroundTask {
    std::string tenant;
    std::vector<int32_t> tokens;
    int32_t neighbours = 0;
};

struct BackgroundStats {
    int64_t queued = 0;     // tasks waiting now (the running one excluded)
    int64_t running = 0;    // 0 or 1: a job computing a copy now
    int64_t started = 0;    // jobs started (a cancelled task started again counts again)
    int64_t done = 0;       // copies made and published
    int64_t cancelled = 0;  // jobs cancelled for a waiting request (their task queued again)
    int64_t refused = 0;    // sightings past N not queued: a cap was reached
    int64_t skipped = 0;    // tasks dropped: the copy existed by then, or too few neighbours
};

class BackgroundConditioning {
public:
    explicit BackgroundConditioning(BackgroundLimits limits = {}) : limits_(limits) {}

    bool enabled() const { return limits_.condition_after > 0; }
    // A document of `tenant` read plain by a request that takes its copy conditioned on
    // `neighbours` neighbours once made. Returns true when this sighting queued its task.
    bool note(const std::string& tenant, const std::vector<int32_t>& tokens, int32_t neighbours);
    bool has_queued() const { return !queue_.empty(); }
    // The oldest queued task, now running (the caller starts its job, or calls finished()).
    std::optional<BackgroundTask> start_next();
    // The running task's job was cancelled (a waiting request needed its blocks): queued again,
    // first, to run when there is room.
    void cancelled(BackgroundTask task);
    // The running task could not start (no room in the pool now): queued again, first, uncounted.
    void postponed(BackgroundTask task);
    // The running task ended: its copy made (`made`), or dropped (present already, too few
    // neighbours). Its document counts from zero again.
    void finished(const BackgroundTask& task, bool made);

    BackgroundStats stats() const;
    int32_t queued_for_account(const std::string& account) const;
    const BackgroundLimits& limits() const { return limits_; }

private:
    static uint64_t key_of(const std::string& tenant, const std::vector<int32_t>& tokens, int32_t neighbours);
    void forget(uint64_t key);

    BackgroundLimits limits_;
    std::unordered_map<uint64_t, int32_t> seen_;  // sightings, by key_of
    std::deque<uint64_t> seen_order_;             // first sightings, oldest first (the bound)
    std::unordered_set<uint64_t> pending_;        // queued or running: not queued twice
    std::deque<BackgroundTask> queue_;
    std::map<std::string, int32_t> per_account_;  // queued or running, by account
    bool running_ = false;
    BackgroundStats stats_;
};

}  // namespace lazyattn::engine
