// The plan of one scheduler step (private to the scheduler's .cpp files): the forward batch and
// which request or segment job each of its row ranges advances.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/scheduler.h"
#include "model/forward_batch.h"

namespace lazyattn::engine {

struct Scheduler::TailRun {
    SequenceState* seq;
    int32_t begin, end;  // tail tokens computed this step
    bool all_logits;
};

struct Scheduler::JobRun {
    int64_t job_id;
    int32_t n;  // tokens computed this step
};

struct Scheduler::PatchRun {
    SequenceState* seq;
    int32_t n;  // recomputed document tokens computed this step
};

struct Scheduler::StepPlan {
    model::ForwardBatch batch;
    std::vector<JobRun> job_runs;      // rows first in the batch, no logits
    std::vector<PatchRun> patch_runs;  // then these, no logits
    std::vector<TailRun> tails;        // then these, in order; logits in the same order
    int32_t num_decode_rows = 0;       // of the rows, one-token decode rows of running requests
};

}  // namespace lazyattn::engine
