// PrefillProgress: llama-server's prompt_progress for the requests that ask for it
// (RagRequest::report_progress). Each gets a kProgress event on its handle when the scheduler
// admits it (processed: what was in place then, the cache's tokens), then one after every step
// that put more of its prompt in place, the last when the whole prompt is (processed == total),
// before its first token. A prompt's tokens are in place when their K/V are written: cached or
// computed segments, what the shared jobs computing its missing documents have done, its tail's
// computed rows. Recomputed document rows (DocumentReuse) and measurements are extra work over
// tokens already counted, so they move nothing. A preempted request reports again only once it
// is past what it reported before (progress never goes back).
//
// The requests watched are named by id, as the scheduler knows them; one that is gone (finished,
// cancelled) is dropped. Engine thread only, as the Scheduler.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/scheduler/scheduler.h"

namespace lazyattn::engine {

class PrefillProgress {
public:
    // The request with this id asked for progress (it is being queued).
    void watch(uint64_t id) { watched_.push_back({id, -1}); }
    // After each Scheduler::schedule() and each Scheduler::update(), before the step's tokens
    // are streamed: reports every watched request whose prompt advanced.
    void report(const Scheduler& scheduler);
    size_t num_watched() const { return watched_.size(); }

private:
    struct Watched {
        uint64_t id = 0;
        int32_t reported = -1;  // processed as last reported (-1: nothing yet)
    };
    std::vector<Watched> watched_;
};

// The prompt tokens of an admitted request whose K/V are written (see PrefillProgress).
int32_t prompt_tokens_in_place(const SequenceState& s, const KvManager& kv);

}  // namespace lazyattn::engine
