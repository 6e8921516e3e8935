// Scheduler: one step's policy. schedule(): reap cancellations, fail queued requests that pins
// left without room, admit what fits (FIFO), make room (preemption), plan rows
// (scheduler_plan.cpp). update(): advance every request, job and patch by what the runner
// computed, and hand sampled tokens to the OutputProcessor.
#include <algorithm>

#include "core/check.h"
#include "core/timer.h"
#include "engine/output/output_processor.h"
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
            if (!running_.empty() || !kv_.jobs().empty()) break;  // first come, first served: it waits for room
            // Nothing runs, so nothing will free blocks: waiting would be forever.
            finish(s, "error",
                   resource_exhausted("request does not fit the KV blocks left free by pinned documents (" +
                                      std::to_string(kv_.num_pinned_blocks()) + " of " +
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
        if (!s.prompt_done() || s.kv.num_tail_computed >= int32_t(s.kv.tail_tokens.size())) continue;
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
    if (running_.empty()) {
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
    out.batch.kv_copies = kv_.take_copies();
    out.progressed = progressed || !out.empty();
    return out;
}

void Scheduler::update(const SchedulerOutput& out, ModelRunnerOutput& ran, OutputProcessor& outputs) {
    for (const DeviationChunk& r : out.deviations) on_deviation(r, ran.kv_deviation);
    if (out.batch.num_rows() == 0) return;  // block-attn copies (or measurements) only
    ++step_count_;
    {
        const int32_t decode = out.num_decode_rows;
        const int32_t prefill = out.batch.num_rows() - decode;
        SchedulerStats::StepKind& kind =
            decode == 0 ? stats_.prefill_only : (prefill == 0 ? stats_.decode_only : stats_.mixed);
        ++kind.steps;
        kind.decode_rows += decode;
        kind.prefill_rows += prefill;
        kind.forward_ms += ran.forward_ms;
    }
    ++stats_.batch_rows[bucket(out.batch.num_rows())];
    const int32_t used = kv_.kv_cache().num_used();
    for (auto& s : running_) s->stats.peak_blocks = std::max(s->stats.peak_blocks, used);

    for (const JobChunk& r : out.jobs) on_job_progress(r.job_id, r.n);
    for (const PatchChunk& r : out.patches) {
        r.seq->kv.num_patch_computed += r.n;
        stats_.prompt_tokens_computed += r.n;
        kv_.share_ready_patches(*r.seq);
    }
    for (const ProbeChunk& r : out.probes) on_probe(r, ran.key_mass);
    const int32_t vocab = vocab_size();
    LA_CHECK(ran.tails.size() == out.tails.size());
    for (size_t i = 0; i < out.tails.size(); ++i) {
        const TailChunk& t = out.tails[i];
        TailResult& r = ran.tails[i];
        SequenceState& s = *t.seq;
        if (t.all_logits && s.want_all_tail_logits) {
            s.tail_logits.insert(s.tail_logits.end(), r.logits, r.logits + size_t(r.num_logit_rows) * vocab);
        }
        for (auto& [k, lp] : r.prompt_logprobs) {
            s.prompt_logprobs[k] = lp.logprob;
            s.prompt_top_logprobs[k] = std::move(lp.top);
        }
        const bool was_prompt = !s.prompt_done();
        s.kv.num_tail_computed = t.end;
        stats_.prompt_tokens_computed += was_prompt ? t.end - t.begin : 0;
        if (was_prompt && s.prompt_done() && s.request.prompt_logprobs >= 0) {
            // Published before the first token, so a stream can echo the prompt with them.
            s.handle->set_prompt_logprobs(s.prompt_logprobs, s.prompt_top_logprobs);
        }
        if (was_prompt && s.prompt_done()) kv_.publish_tail(s);
        if (!s.prompt_done()) continue;
        if (!t.sample) {  // nothing more to generate (max_tokens reached, or 0)
            outputs.flush(s);
            finish(s, "length");
            continue;
        }
        if (s.num_generated++ == 0) s.t_first_token = now_ms();
        s.history.push_back(r.token);
        const std::string reason = outputs.on_token(s, r.token, r.has_logprobs ? &r.logprobs : nullptr);
        if (!reason.empty()) {
            outputs.flush(s);
            finish(s, reason);
        } else {
            s.kv.tail_tokens.push_back(r.token);  // computed by the next step
        }
    }
    drop_finished();
    if (config_.check_integrity) check_integrity();
}

void Scheduler::on_probe(const ProbeChunk& r, const std::vector<float>& key_mass) {
    SequenceState& s = *r.seq;
    RequestKv& ar = s.kv;
    // The mass of the probe's keys: each segment's tokens in order (one span each while no rows
    // are recomputed), then the tail's; the documents' is summed over the probe's chunks.
    if (r.mass_offset >= 0) {  // else no row of this chunk is measured
        const float* m = key_mass.data() + r.mass_offset;
        for (SegmentPlacement& place : ar.segments) {
            LA_CHECK(m + place.num_tokens <= key_mass.data() + key_mass.size());
            for (size_t t = 0; t < place.selection_score.size(); ++t) place.selection_score[t] += m[t];
            m += place.num_tokens;
        }
    }
    ar.num_probe_computed += r.n;
    stats_.prompt_tokens_computed += r.n;
    s.stats.prefill_tokens += r.n;
    if (ar.num_probe_computed < ar.num_prompt_tail) return;
    const int32_t chosen = kv_.select_by_score(s);
    s.stats.prefill_tokens += chosen;
    s.stats.recomputed_tokens += chosen;
    kv_.share_ready_patches(s);  // nothing chosen: its siblings may run at once
}

void Scheduler::on_deviation(const DeviationChunk& r, const std::vector<float>& kv_deviation) {
    SequenceState& s = *r.seq;
    RequestKv& ar = s.kv;
    LA_CHECK(r.row + (r.end - r.begin) <= int32_t(kv_deviation.size()));
    int32_t j = 0;  // index over the measured documents' tokens
    for (SegmentPlacement& place : ar.segments) {
        const int32_t n = int32_t(place.selection_score.size());
        for (int32_t t = std::max(0, r.begin - j); t < n && j + t < r.end; ++t) {
            place.selection_score[size_t(t)] = kv_deviation[size_t(r.row + j + t - r.begin)];
        }
        j += n;
    }
    ar.num_deviation_computed += r.end - r.begin;
    s.stats.deviation_rows += r.end - r.begin;
    if (ar.deviation_pending()) return;
    const int32_t chosen = kv_.select_by_score(s);
    s.stats.prefill_tokens += chosen;
    s.stats.recomputed_tokens += chosen;
    kv_.share_ready_patches(s);
}

void Scheduler::on_job_progress(int64_t job_id, int32_t n) {
    stats_.prompt_tokens_computed += n;
    stats_.segment_job_tokens += n;
    if (!kv_.advance_job(job_id, n)) return;
    for (auto& s : running_) {  // their segment's KV is ready
        for (int64_t& j : s->segment_jobs) {
            if (j == job_id) j = -1;
        }
    }
}

}  // namespace lazyattn::engine
