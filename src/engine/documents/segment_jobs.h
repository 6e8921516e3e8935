// SegmentJobs: the documents being computed, each once for every request that needs it (a
// SegmentJob: a missing segment computed as its own sequence from position 0). The table keeps
// the jobs' references on the pool's blocks and their users; which blocks a job gets, and what
// its end publishes, stay the KV manager's.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "engine/sequence/sequence_state.h"
#include "kv/kv_cache.h"

namespace lazyattn::engine {

class SegmentJobs {
public:
    explicit SegmentJobs(kv::KvCache& kv) : kv_(kv) {}

    // Every running job by id, oldest first.
    const std::map<int64_t, SegmentJob>& all() const { return jobs_; }
    SegmentJob& at(int64_t id) { return jobs_.at(id); }
    // The running shared job computing `tokens` under `seed`, or -1.
    int64_t find(const kv::BlockHash& seed, const std::vector<int32_t>& tokens) const;
    // Registers a job, taking its own reference on each of job.blocks; its id.
    int64_t add(SegmentJob job);
    // One more user of job `id` (none when id < 0): a request reading it, or a job anchored on it.
    // A foreground user (a request, or a foreground job) makes a background job, and the jobs it
    // waits for, foreground: a request never waits behind background priority.
    void join(int64_t id, bool background_user = false);
    // The id the next add() returns.
    int64_t next_id() const { return next_id_; }
    // One user fewer: a job nobody needs any more is dropped with its references (and lets go of
    // its anchor's job).
    void leave(int64_t id);
    // A finished job ends: its references returned (its users keep their own), its anchor's job
    // let go.
    void finish(int64_t id);
    int64_t num_started() const { return num_started_; }

private:
    // Returns job `it`'s references and erases it; its anchor's job, or -1.
    int64_t erase(std::map<int64_t, SegmentJob>::iterator it);

    kv::KvCache& kv_;
    std::map<int64_t, SegmentJob> jobs_;  // ordered: oldest job first
    int64_t next_id_ = 0;
    int64_t num_started_ = 0;
};

}  // namespace lazyattn::engine
