// Scheduler: one step's policy. schedule(): reap cancellations, fail queued requests that pins
// left without room, admit what fits (FIFO), make room (preemption), plan rows
// (scheduler_plan.cpp). update(): advance every job and request phase by what the runner
// computed, and return the sampled tokens (EngineCore::step gives them to the OutputProcessor).
#include <algorithm>

#include "core/check.h"
#include "core/timer.h"
#include "engine/reuse/measured_selection.h"
#include "engine/reuse/phase_kinds.h"
#include "engine/scheduler/scheduler.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {
namespace {

int32_t bucket(int32_t rows) {
    int32_t b = 1;
    while (b < rows) b *= 2;
    return b;
}

}  // namespace

bool Scheduler::admit_waiting() {
    bool progressed = false;
    while (!waiting_.empty() && int32_t(running_.size()) < config_.max_num_seqs) {
        SequenceState& s = *waiting_.front();
        if (!try_admit(s)) {
            if (cancel_background()) continue;                    // its blocks were what the request lacked: try again
            if (!running_.empty() || !kv_.jobs().empty()) break;  // first come, first served: it waits for room
            // Nothing runs, so nothing will free blocks: waiting would be forever.
            finish(s, FinishReason::kError,
                   resource_exhausted("request does not fit the KV blocks left free by pinned documents (" +
                                      std::to_string(documents_.pins().num_pinned()) + " of " +
                                      std::to_string(kv_.num_blocks()) + " pinned)"));
            waiting_.pop_front();
            progressed = true;
            continue;
        }
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
        progressed = true;
    }
    return progressed;
}

void Scheduler::make_decode_room() {
    // Decode rows need room for one more token; make it by preempting the newest requests.
    for (size_t i = 0; i < running_.size(); ++i) {
        SequenceState& s = *running_[i];
        if (!s.prompt_done() || s.kv.num_tail_computed() >= int32_t(s.kv.tail_tokens.size())) continue;
        while (!kv_.grow_tail(s, int32_t(s.kv.tail_tokens.size()))) {
            if (!preempt_for(&s)) break;  // s itself was the newest: it waits
        }
        if (i >= running_.size() || running_[i].get() != &s) i = size_t(-1);  // the list changed: rescan
    }
}

void Scheduler::make_block_attn_copies() {
    // Block-attn copies segments once they are all computed.
    for (size_t i = 0; i < running_.size(); ++i) {
        SequenceState& s = *running_[i];
        if (s.materialized || !s.segments_ready()) continue;
        while (!kv_.make_private_copies(s).ok()) {
            if (!preempt_for(&s)) break;
        }
        if (i < running_.size() && running_[i].get() == &s && s.admitted)
            s.materialized = true;
        else
            i = size_t(-1);
    }
}

SchedulerOutput Scheduler::schedule() {
    bool progressed = reap_cancelled();
    progressed |= fail_unfittable();
    progressed |= admit_waiting();
    progressed |= start_background();  // only when nobody waits
    if (running_.empty() && background_job_ < 0) {
        SchedulerOutput idle;
        idle.progressed = progressed;
        return idle;
    }
    const int64_t preemptions = stats_.preemptions;
    make_decode_room();
    if (config_.cache_mode == CacheMode::kBlockAttn) make_block_attn_copies();
    progressed |= stats_.preemptions != preemptions;

    SchedulerOutput out = plan_step();
    // Block-attn's copies made this step run in its forward, before any row is stored.
    out.kv_copies = kv_.take_copies();
    out.progressed = progressed || !out.empty();
    return out;
}

std::vector<StepToken> Scheduler::update(const SchedulerOutput& out, ModelRunnerOutput& ran) {
    LA_CHECK(ran.chunks.size() == out.chunks.size());
    std::vector<StepToken> tokens;
    const int32_t rows = out.num_rows();
    if (rows > 0) {
        ++step_count_;
        const int32_t decode = out.num_decode_rows;
        const int32_t prefill = rows - decode;
        SchedulerStats::StepKind& kind =
            decode == 0 ? stats_.prefill_only : (prefill == 0 ? stats_.decode_only : stats_.mixed);
        ++kind.steps;
        kind.decode_rows += decode;
        kind.prefill_rows += prefill;
        kind.forward_ms += ran.forward_ms;
        ++stats_.batch_rows[bucket(rows)];
        stats_.background_rows += out.num_background_rows;
        const int32_t used = kv_.kv_cache().num_used();
        for (auto& s : running_) s->stats.peak_blocks = std::max(s->stats.peak_blocks, used);
    }
    for (const JobChunk& r : out.jobs) on_job_progress(r.job_id, r.end - r.begin);
    for (size_t i = 0; i < out.chunks.size(); ++i) {
        const PhaseChunk& c = out.chunks[i];
        if (c.kind != PhaseKind::kTail) {
            on_recompute(c, ran.chunks[i].measured);
        } else if (auto t = on_tail(c, ran.chunks[i])) {
            tokens.push_back(*t);
        }
    }
    return tokens;
}

std::optional<StepToken> Scheduler::on_tail(const PhaseChunk& t, ChunkResult& r) {
    SequenceState& s = *t.seq;
    if (t.all_logits && s.want_all_tail_logits) {
        s.tail_logits.insert(s.tail_logits.end(), r.logits, r.logits + size_t(r.num_logit_rows) * vocab_size());
    }
    for (auto& [k, lp] : r.prompt_logprobs) {
        s.prompt_logprobs[k] = lp.logprob;
        s.prompt_top_logprobs[k] = std::move(lp.top);
    }
    const bool was_prompt = !s.prompt_done();
    s.kv.tail().computed = t.end;
    stats_.prompt_tokens_computed += was_prompt ? t.rows() : 0;
    if (was_prompt && s.prompt_done() && s.request.prompt_logprobs >= 0) {
        // Published before the first token, so a stream can echo the prompt with them.
        s.handle->set_prompt_logprobs(s.prompt_logprobs, s.prompt_top_logprobs);
    }
    if (was_prompt && s.prompt_done()) kv_.publish_tail(s);
    if (!s.prompt_done()) return std::nullopt;
    if (!t.sample) return StepToken{&s, -1, nullptr};  // nothing more to generate (max_tokens reached, or 0)
    if (s.num_generated++ == 0) s.t_first_token = now_ms();
    s.history.push_back(r.token);
    s.kv.tail_tokens.push_back(r.token);  // computed by the next step, unless the request ends
    return StepToken{&s, r.token, r.has_logprobs ? &r.logprobs : nullptr};
}

void Scheduler::end_step() {
    drop_finished();
    if (config_.check_integrity) check_integrity();
}

void Scheduler::on_recompute(const PhaseChunk& c, const std::vector<float>& measured) {
    SequenceState& s = *c.seq;
    const PhaseKindRow& kind = phase_kind(c.kind);
    if (kind.record != nullptr) kind.record(s, c.begin, c.end, measured);
    if (!kind.apart) stats_.prompt_tokens_computed += c.rows();
    PrefillPhase& phase = *s.kv.find_phase(c.kind);
    phase.computed = c.end;
    if (kind.measures() && phase.done()) {  // the measurement is complete: its rows are chosen
        const int32_t chosen = choose_measured_rows(s, kv_.block_size());
        s.stats.prefill_tokens += chosen;
        s.stats.recomputed_tokens += chosen;
    }
    kv_.patch_shares().share_ready(s);  // once every phase before the tail is done (nothing chosen: at once)
}

void Scheduler::on_job_progress(int64_t job_id, int32_t n) {
    stats_.prompt_tokens_computed += n;
    stats_.segment_job_tokens += n;
    if (!kv_.advance_job(job_id, n)) return;
    if (job_id == background_job_) on_background_done();
    for (auto& s : running_) {  // their segment's KV is ready
        for (int64_t& j : s->segment_jobs) {
            if (j == job_id) j = -1;
        }
    }
}

}  // namespace lazyattn::engine
