// Scheduler: planning one step's rows under the token budget. Decode rows come first (one per
// running request). Prefill work takes the rest, at most max_prefill_while_decoding rows when
// the step has decode rows (each decode row waits for the whole step: without the cap, a
// request's output tokens came one per 512-row prefill step while others' documents were
// computed, TPOT 118-149 ms against 30-40 ms for decode-only steps in the RAG benchmark), in
// first-come order, each unfinished segment job
// (oldest first) and each request whose segments are ready (in admission order) being an item,
// its first unfinished prefill phase (PrefillPhase) whatever its kind, but no item takes more than half the budget in one turn; turns repeat while budget and
// work remain. So one long document cannot hold the prompts behind it back (they get the other
// half every step), a lone item still gets the whole budget, and otherwise work finishes in
// arrival order: sharing the budget equally among all items (tried first) doubled the load
// test's TTFT p50 (0.40 s -> 0.90 s), since every request's prefill then ends late.
#include <algorithm>

#include "core/math.h"
#include "engine/reuse/phase_kinds.h"
#include "engine/scheduler/scheduler.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {
namespace {

// One item of the prefill: a segment job, or a request's first unfinished phase.
struct PrefillItem {
    int64_t job_id = -1;           // a segment job, or
    SequenceState* seq = nullptr;  // a request's phase
    PhaseKind kind = PhaseKind::kTail;
    int32_t done = 0;  // rows computed before this step
    int32_t left = 0;  // budget tokens still to spend (rows / rows_per_budget_token)
    int32_t take = 0;  // budget tokens planned this step
};

// Hands out `budget` tokens in turns of at most `share`, items in order.
void share_budget(std::vector<PrefillItem>& items, int32_t budget, int32_t share) {
    for (bool any = true; any && budget > 0;) {
        any = false;
        for (size_t k = 0; k < items.size() && budget > 0; ++k) {
            PrefillItem& it = items[k];
            const int32_t give = std::min({share, it.left - it.take, budget});
            if (give <= 0) continue;
            it.take += give;
            budget -= give;
            any = true;
        }
    }
}

}  // namespace

PhaseChunk Scheduler::tail_chunk(SequenceState& s, int32_t begin, int32_t end, bool all_logits) const {
    PhaseChunk t{&s, PhaseKind::kTail, begin, end, all_logits};
    // The last prompt row (or a decode row) yields the next token, unless max_tokens is reached.
    t.sample = end >= s.kv.num_prompt_tail() && s.num_generated < s.request.max_tokens;
    if (all_logits && s.request.prompt_logprobs >= 0) {
        t.prompt_logprobs = s.request.prompt_logprobs;
        // Row j predicts tail token j + 1 of the KV tail. In the prefix and none modes that tail
        // is the segments, then request.tail (then any tokens generated before a preemption); in
        // the segment modes it starts with request.tail.
        if (!segments_are_blocks(config_.cache_mode)) {
            for (const auto& seg : s.request.segments) t.prompt_offset += int32_t(seg.size());
        }
    }
    return t;
}

SchedulerOutput Scheduler::plan_step() {
    SchedulerOutput plan;
    int32_t budget = config_.max_batch_tokens;
    for (auto& s : running_) {  // decode first
        if (budget <= 0) break;
        const int32_t have = int32_t(s->kv.tail_tokens.size());
        const int32_t computed = s->kv.num_tail_computed();
        if (!s->prompt_done() || computed >= have) continue;
        if (int32_t(s->kv.tail_blocks.size()) * kv_.block_size() < have) continue;  // waits for room
        plan.chunks.push_back(tail_chunk(*s, computed, computed + 1, false));
        --budget;
    }
    plan.num_decode_rows = int32_t(plan.chunks.size());
    if (plan.num_decode_rows > 0 && config_.max_prefill_while_decoding > 0) {
        budget = std::min(budget, config_.max_prefill_while_decoding);
    }
    const int32_t left = plan_prefill(plan, budget);
    // Background work only in a step that carries no request's prefill (scheduler_background.cpp).
    if (plan.chunks.size() == size_t(plan.num_decode_rows) && plan.jobs.empty()) plan_background(plan, left);
    return plan;
}

int32_t Scheduler::plan_prefill(SchedulerOutput& plan, int32_t budget) {
    std::vector<PrefillItem> items;
    for (const auto& [id, job] : kv_.jobs()) {
        // An anchored document waits for its preamble's job (which, older, comes first), a
        // conditioned one for its neighbours' prefix.
        // Background jobs get only what requests leave (plan_background).
        if (job.done() || job.background || (job.anchor_job >= 0 && kv_.jobs().count(job.anchor_job) > 0)) continue;
        items.push_back(
            {id, nullptr, PhaseKind::kTail, job.num_computed, int32_t(job.tokens.size()) - job.num_computed});
    }
    for (auto& s : running_) {
        if (s->prompt_done() || !s->segments_ready()) continue;
        if (config_.cache_mode == CacheMode::kBlockAttn && !s->materialized) continue;
        if (s->kv.awaiting_patches) continue;  // a sibling choice computes its recomputed rows
        const PrefillPhase& phase = s->kv.current_phase();
        const int32_t per = phase_kind(phase.kind).rows_per_budget_token;
        items.push_back({-1, s.get(), phase.kind, phase.computed, ceil_div(phase.total - phase.computed, per)});
    }
    if (items.empty() || budget <= 0) return std::max(0, budget);
    share_budget(items, budget, std::max(kv_.block_size(), budget / 2));
    for (const PrefillItem& it : items) {
        budget -= it.take;
        if (it.take == 0) continue;
        if (it.seq == nullptr) {
            const SegmentJob& job = kv_.jobs().at(it.job_id);
            plan.jobs.push_back({it.job_id, &job, it.done, it.done + it.take});
            continue;
        }
        const PrefillPhase& phase = it.seq->kv.current_phase();
        const int32_t end = std::min(phase.total, it.done + it.take * phase_kind(it.kind).rows_per_budget_token);
        if (it.kind == PhaseKind::kTail) {
            plan.chunks.push_back(tail_chunk(*it.seq, it.done, end, it.seq->all_tail_rows()));
        } else {
            plan.chunks.push_back({it.seq, it.kind, it.done, end});
        }
    }
    return budget;
}

}  // namespace lazyattn::engine
