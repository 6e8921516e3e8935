// Scheduler: background work, the conditioned copies made once documents recur
// (background_conditioning.h has the policy of what is made; this file, when it runs).
//
// The rules that bound what it costs requests:
// - A job starts only when no request waits for admission and the pool keeps room for a request
//   as large as the largest running one beside it, and is cancelled (its blocks freed,
//   its task queued again first) as soon as a waiting request does not fit or a running one
//   needs room to decode: background work never holds blocks a request needs.
// - Its rows are planned only in steps that carry no request's prefill (decode-only steps and
//   idle ones), from the budget the step leaves, at most background_rows_per_step. So a request
//   never shares a step with background rows before its first token: what it can wait for is
//   the one step in flight when it arrived, at most background_rows_per_step rows of it
//   background work (docs/benchmarks.md measures it). A decode step carries at most that many
//   extra rows.
// - A request's choices (n > 1) read one decision: the copies present at the first admission of
//   any of them, pinned for all (RagRequest::conditioning_pinned), so a copy published between
//   two choices' admissions changes none of their answers. Only a copy gone from RAM and the store
//   by a later choice's admission (evicted while no sibling held it) is then encoded alone.
// - A request that needs the job's segment (it reads the copy with neighbours=K, or the prefix's
//   document plainly) joins it like any job, which makes it foreground (SegmentJobs::join): no
//   request waits behind background priority.
#include <algorithm>

#include "engine/reuse/conditioning.h"
#include "engine/scheduler/scheduler.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {
namespace {

// Choices of one request (a group is a number a caller chose: the prompt is checked too).
bool siblings(const RagRequest& a, const RagRequest& b) {
    return a.choice_group != 0 && a.choice_group == b.choice_group && a.tenant == b.tenant &&
           a.first_segment_is_preamble == b.first_segment_is_preamble && a.reuse == b.reuse && a.segments == b.segments;
}

void take_decision(RagRequest& to, const RagRequest& from) {
    to.conditioned_ready = from.conditioned_ready;
    to.conditioned_on = from.conditioned_on;
    to.conditioning_pinned = true;
}

}  // namespace

void Scheduler::adopt_conditioning(SequenceState& s) {
    RagRequest& r = s.request;
    if (!r.reuse.neighbours_when_ready || r.conditioning_pinned || r.choice_group == 0) return;
    auto adopt_from = [&](const auto& list) {
        for (const auto& o : list) {
            if (o.get() == &s || !o->request.conditioning_pinned || !siblings(r, o->request)) continue;
            take_decision(r, o->request);
            return true;
        }
        return false;
    };
    if (!adopt_from(running_)) adopt_from(waiting_);
}

void Scheduler::pin_conditioning(SequenceState& s) {
    RagRequest& r = s.request;
    if (!r.reuse.neighbours_when_ready || r.conditioning_pinned) return;
    r.conditioning_pinned = true;
    if (r.choice_group == 0) return;
    for (auto& o : waiting_) {
        if (o.get() != &s && !o->request.conditioning_pinned && siblings(o->request, r)) take_decision(o->request, r);
    }
}

void Scheduler::note_background(const SequenceState& s) {
    const RagRequest& r = s.request;
    if (!background_.enabled() || !r.reuse.neighbours_when_ready || config_.position_aware_segments) return;
    for (size_t d = 0; d < r.segments.size(); ++d) {
        if (!r.is_document(d) || r.segments[d].empty() || r.conditioning_neighbours(d) > 0) continue;
        if (std::find(r.segments.begin(), r.segments.begin() + d, r.segments[d]) != r.segments.begin() + d) continue;
        background_.note(r.tenant, r.segments[d], r.reuse.neighbours);
    }
}

bool Scheduler::start_background() {
    if (!background_.enabled() || background_job_ >= 0 || !waiting_.empty()) return false;
    bool progressed = false;
    while (auto task = background_.start_next()) {
        // The copy on the neighbours the tenant's index gives now: what a request reading the
        // document next looks for (KvManager::resolve_conditioned_copies).
        const ConditioningPrefix prefix =
            conditioning_prefix(neighbours_, task->tenant, task->tokens, task->neighbours);
        const bool stored = store_ != nullptr && store_->contains(task->tenant, task->tokens, prefix.key);
        if (stored || kv_.has_conditioned_copy(task->tenant, task->tokens, prefix.key)) {
            background_.finished(*task, false);  // made meanwhile (a request, another engine's store)
            progressed = true;
            continue;
        }
        if (prefix.short_of_neighbours) {
            // A copy on fewer than K neighbours is never kept (design.md §10): the document counts
            // again, and is tried once it recurs as often again (the corpus grows meanwhile).
            background_.finished(*task, false);
            progressed = true;
            continue;
        }
        ConditionedCopyInfo copy;
        copy.neighbours = task->neighbours;
        copy.key = prefix.key;
        copy.prefix_tokens = int32_t(prefix.tokens.size());
        copy.stored = store_ != nullptr && store_->store() != nullptr;
        for (const std::vector<int32_t>* n : prefix.neighbours)
            copy.neighbour_ids.push_back(documents_.id(task->tenant, *n));
        // Room for one more request like the largest running one stays free: a job started into the
        // last free blocks would be cancelled by the next arrival, its rows wasted (measured: 14 of
        // 18 jobs on the closed-loop headline stream before this rule).
        int32_t reserve = 0;
        for (const auto& s : running_) reserve = std::max(reserve, int32_t(s->kv.held.size()));
        const int64_t job = kv_.start_background_job(task->tenant, task->tokens, prefix.key, prefix.tokens, reserve);
        if (job < 0) {  // no room now: tried again first, once blocks are free
            background_.postponed(std::move(*task));
            return progressed;
        }
        background_job_ = job;
        background_task_ = std::move(task);
        background_copy_ = std::move(copy);
        return true;
    }
    return progressed;
}

void Scheduler::plan_background(SchedulerOutput& plan, int32_t budget) {
    if (background_job_ < 0) return;
    budget = std::min(budget, config_.background_rows_per_step);
    if (budget <= 0) return;
    // The document's job, or first the prefix job it waits for while that one is background too.
    int64_t id = background_job_;
    for (;;) {
        const SegmentJob& job = kv_.jobs().at(id);
        if (job.anchor_job < 0 || kv_.jobs().count(job.anchor_job) == 0) break;
        id = job.anchor_job;
    }
    const SegmentJob& job = kv_.jobs().at(id);
    if (!job.background || job.done()) return;  // a request made it foreground: planned with requests
    const int32_t take = std::min(budget, int32_t(job.tokens.size()) - job.num_computed);
    plan.jobs.push_back({id, &job, job.num_computed, job.num_computed + take});
    plan.num_background_rows += take;
}

void Scheduler::on_background_done() {
    documents_.note_conditioned(background_task_->tenant, background_task_->tokens, std::move(background_copy_));
    background_.finished(*background_task_, true);
    background_task_.reset();
    background_job_ = -1;
    background_copy_ = {};
}

bool Scheduler::cancel_background() {
    if (background_job_ < 0) return false;
    auto it = kv_.jobs().find(background_job_);
    if (it == kv_.jobs().end() || !it->second.background) return false;  // foreground now: a request needs it
    kv_.leave_job(background_job_);
    background_.cancelled(std::move(*background_task_));
    background_task_.reset();
    background_job_ = -1;
    background_copy_ = {};
    return true;
}

}  // namespace lazyattn::engine
