// Scheduler: one step. Reap cancellations, fail queued requests that pins left without room,
// admit what fits (FIFO), plan rows (scheduler_plan.cpp), run one forward, hand out logits
// (sample, stream, finish).
#include <algorithm>

#include "core/check.h"
#include "core/timer.h"
#include "engine/scheduler_plan.h"

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
            if (!running_.empty() || !jobs_.empty()) break;  // first come, first served: it waits for room
            // Nothing runs, so nothing will free blocks: waiting would be forever.
            finish(s, "error",
                   resource_exhausted("request does not fit the KV blocks left free by pinned documents (" +
                                      std::to_string(pins_.num_pinned()) + " of " +
                                      std::to_string(kv_.pool().num_blocks()) + " pinned)"));
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
        while (!ensure_tail_capacity(s, int32_t(s.kv.tail_tokens.size()))) {
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
        while (!materialize_copies(s).ok()) {
            if (!preempt_for(&s)) break;
        }
        if (i < running_.size() && running_[i].get() == &s && s.admitted)
            s.materialized = true;
        else
            i = size_t(-1);
    }
}

bool Scheduler::step() {
    bool progressed = reap_cancelled();
    progressed |= fail_unfittable();
    progressed |= admit_waiting();
    if (running_.empty()) return progressed;
    const int64_t preemptions = stats_.preemptions;
    make_decode_room();
    if (config_.cache_mode == CacheMode::kBlockAttn) make_block_attn_copies();
    progressed |= stats_.preemptions != preemptions;

    StepPlan plan = plan_step();
    // Block-attn's copies made this step run in its forward, before any row is stored.
    for (auto& [id, copy] : pending_copies_) plan.batch.kv_copies.push_back(std::move(copy));
    pending_copies_.clear();
    if (plan.batch.num_rows() == 0) {
        if (plan.batch.kv_copies.empty()) return progressed;
        const Status st = model_.forward(plan.batch, *kv_memory_, &step_logits_);  // copies only
        LA_CHECK_MSG(st.ok(), "forward failed on a validated plan: %s", st.to_string().c_str());
        return true;
    }
    std::vector<float>& logits = step_logits_;
    const double t_forward = now_ms();
    const Status st = model_.forward(plan.batch, *kv_memory_, &logits);
    LA_CHECK_MSG(st.ok(), "forward failed on a validated plan: %s", st.to_string().c_str());
    ++step_count_;
    {
        const int32_t decode = plan.num_decode_rows;
        const int32_t prefill = plan.batch.num_rows() - decode;
        SchedulerStats::StepKind& kind =
            decode == 0 ? stats_.prefill_only : (prefill == 0 ? stats_.decode_only : stats_.mixed);
        ++kind.steps;
        kind.decode_rows += decode;
        kind.prefill_rows += prefill;
        kind.forward_ms += now_ms() - t_forward;
    }
    ++stats_.batch_rows[bucket(plan.batch.num_rows())];
    for (auto& s : running_) s->stats.peak_blocks = std::max(s->stats.peak_blocks, kv_.num_used());

    for (const JobRun& r : plan.job_runs) on_job_progress(r.job_id, r.n);
    for (const PatchRun& r : plan.patch_runs) {
        r.seq->kv.num_patch_computed += r.n;
        stats_.prompt_tokens_computed += r.n;
    }
    const int32_t vocab = model_.config().vocab_size;
    size_t logit_row = 0;
    for (const TailRun& t : plan.tails) {
        SequenceState& s = *t.seq;
        const int32_t rows_with_logits = t.all_logits ? t.end - t.begin : 1;
        const float* last = logits.data() + (logit_row + rows_with_logits - 1) * vocab;
        if (t.all_logits && s.want_all_tail_logits) {
            s.tail_logits.insert(s.tail_logits.end(), logits.begin() + logit_row * vocab,
                                 logits.begin() + (last - logits.data()) + vocab);
        }
        if (t.all_logits && s.request.prompt_logprobs >= 0) {
            record_prompt_logprobs(s, logits.data() + logit_row * vocab, t.begin, t.end);
        }
        logit_row += rows_with_logits;
        const bool was_prompt = !s.prompt_done();
        s.kv.num_tail_computed = t.end;
        stats_.prompt_tokens_computed += was_prompt ? t.end - t.begin : 0;
        if (was_prompt && s.prompt_done() && s.request.prompt_logprobs >= 0) {
            // Published before the first token, so a stream can echo the prompt with them.
            s.handle->set_prompt_logprobs(s.prompt_logprobs, s.prompt_top_logprobs);
        }
        if (was_prompt && s.prompt_done() && config_.cache_mode != CacheMode::kNone) {
            kv_.publish(tail_seed(s), std::span<const int32_t>(s.kv.tail_tokens.data(), s.kv.num_prompt_tail),
                        s.kv.tail_blocks, false);
        }
        if (s.prompt_done()) on_tail_logits(s, last);
    }
    drop_finished();
    if (config_.check_integrity) check_integrity();
    return true;
}

void Scheduler::on_job_progress(int64_t job_id, int32_t n) {
    auto it = jobs_.find(job_id);
    LA_CHECK(it != jobs_.end());
    SegmentJob& job = it->second;
    job.num_computed += n;
    stats_.prompt_tokens_computed += n;
    stats_.segment_job_tokens += n;
    if (!job.done()) return;
    kv_.publish(job.seed, job.tokens, job.blocks, true);
    if (job.storable) store_segment(job.store_variant, job.tokens, job.blocks);
    for (auto& s : running_) {
        for (int64_t& j : s->segment_jobs) {
            if (j == job_id) j = -1;
        }
    }
    kv_.release(job.blocks);  // the users keep their own references
    kv_.release(job.anchor_blocks);
    const int64_t anchor_job = job.anchor_job;
    jobs_.erase(it);
    if (anchor_job >= 0) drop_job(anchor_job);  // finished first, so normally gone already
}

void Scheduler::record_prompt_logprobs(SequenceState& s, const float* rows, int32_t begin, int32_t end) {
    // Row j's logits predict tail token j + 1 of the KV tail. In the prefix and none modes that
    // tail is the segments, then request.tail (then any tokens generated before a preemption);
    // in the segment modes it starts with request.tail.
    int32_t offset = 0;
    if (!segments_are_blocks(config_.cache_mode)) {
        for (const auto& seg : s.request.segments) offset += int32_t(seg.size());
    }
    const int32_t vocab = model_.config().vocab_size;
    const auto& tail = s.request.tail;
    for (int32_t j = begin; j < end; ++j) {
        const int32_t i = j + 1 - offset;  // the request.tail token row j predicts
        if (i < 0 || i >= int32_t(tail.size())) continue;
        TokenLogprobs lp = token_logprobs(rows + size_t(j - begin) * vocab, vocab, tail[i], s.request.prompt_logprobs);
        s.prompt_logprobs[i] = lp.logprob;
        s.prompt_top_logprobs[i] = std::move(lp.top);
    }
}

void Scheduler::on_tail_logits(SequenceState& s, const float* logits) {
    const RagRequest& r = s.request;
    if (s.num_generated >= r.max_tokens) {
        finish(s, "length");
        return;
    }
    TokenLogprobs lp;
    TokenLogprobs* want_lp = r.sampling.logprobs >= 0 ? &lp : nullptr;
    const size_t num_prompt = s.history.size() - size_t(s.num_generated);
    const int32_t token = s.sampler->sample(logits, model_.config().vocab_size, s.history, num_prompt, want_lp);
    if (s.num_generated++ == 0) s.t_first_token = now_ms();
    s.history.push_back(token);
    if (!r.ignore_eos && tokenizer_.is_end_of_generation(token)) {
        s.handle->push_token(token, "", want_lp);
        finish(s, "stop");
        return;
    }
    s.handle->push_token(token, s.stops->push(s.decoder->push(token)), want_lp);
    if (s.stops->stopped()) {
        finish(s, "stop");
    } else if (s.num_generated >= r.max_tokens || s.kv.next_position() >= context_length()) {
        finish(s, "length");
    } else {
        s.kv.tail_tokens.push_back(token);  // computed by the next step
    }
}

}  // namespace lazyattn::engine
