// Scheduler: one step. Admit what fits (FIFO), then plan rows under the token budget: one decode
// row per running request first, then segment-job chunks, then prompt-tail chunks of requests
// whose segments are ready; run one forward; hand out logits (sample, stream, finish).
#include <algorithm>

#include "core/check.h"
#include "core/timer.h"
#include "engine/batch_builder.h"
#include "engine/scheduler.h"

namespace lazyattn::engine {
namespace {

int32_t bucket(int32_t rows) {
    int32_t b = 1;
    while (b < rows) b *= 2;
    return b;
}

}  // namespace

struct Scheduler::TailRun {
    SequenceState* seq;
    int32_t begin, end;
    bool all_logits;
};

struct Scheduler::JobRun {
    int64_t job_id;
    int32_t n;
};

void Scheduler::admit_waiting() {
    while (!waiting_.empty() && int32_t(running_.size()) < config_.max_num_seqs) {
        SequenceState& s = *waiting_.front();
        auto admitted = try_admit(s);
        if (!admitted.ok()) {
            finish(s, "error", admitted.status());
            waiting_.pop_front();
            continue;
        }
        if (!*admitted) break;  // first come, first served: nothing overtakes the head
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
    }
}

void Scheduler::add_tail_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end, bool all_logits) {
    const int32_t bs = kv_.block_size();
    const ActiveRequest& ar = s.kv;
    const int32_t span_begin = int32_t(b.spans.size());
    for (const SegmentPlacement& place : ar.segments) {
        b.spans.push_back({int32_t(b.block_ids.size()), place.num_tokens, place.logical_start, place.stored_base});
        b.block_ids.insert(b.block_ids.end(), place.blocks.begin(), place.blocks.end());
    }
    b.spans.push_back({int32_t(b.block_ids.size()), end, ar.tail_start, ar.tail_start});
    b.block_ids.insert(b.block_ids.end(), ar.tail_blocks.begin(), ar.tail_blocks.begin() + (end + bs - 1) / bs);
    b.seqs.push_back({b.num_rows(), end - begin, span_begin, int32_t(b.spans.size())});
    for (int32_t t = begin; t < end; ++t) {
        if (all_logits || t == end - 1) b.logit_rows.push_back(b.num_rows());
        b.token_ids.push_back(ar.tail_tokens[t]);
        b.positions.push_back(ar.tail_start + t);
        b.store_positions.push_back(ar.tail_start + t);
        b.slot_mapping.push_back(ar.tail_blocks[t / bs] * bs + t % bs);
    }
}

bool Scheduler::step() {
    reap_cancelled();
    admit_waiting();
    if (running_.empty()) return false;

    // Decode rows need room for one more token; make it by preempting the newest requests.
    for (size_t i = 0; i < running_.size(); ++i) {
        SequenceState& s = *running_[i];
        if (!s.prompt_done() || s.kv.num_tail_computed >= int32_t(s.kv.tail_tokens.size())) continue;
        while (!ensure_tail_capacity(s, int32_t(s.kv.tail_tokens.size()))) {
            if (!preempt_for(&s)) break;  // s itself was the newest: it waits
        }
        if (i >= running_.size() || running_[i].get() != &s) i = size_t(-1);  // the list changed: rescan
    }
    // Block-attn copies segments once they are all computed.
    if (config_.cache_mode == CacheMode::kBlockAttn) {
        for (size_t i = 0; i < running_.size(); ++i) {
            SequenceState& s = *running_[i];
            if (s.materialized || !s.segments_ready()) continue;
            while (!materialize_copies(s).ok()) {
                if (!preempt_for(&s)) break;
            }
            if (i < running_.size() && running_[i].get() == &s && s.admitted) s.materialized = true;
            else i = size_t(-1);
        }
    }

    model::ForwardBatch batch;
    batch.keys_rotated = keys_stored_rotated(config_.cache_mode);
    int32_t budget = config_.max_batch_tokens;
    std::vector<TailRun> tails;
    std::vector<JobRun> job_runs;
    for (auto& s : running_) {  // decode first
        if (budget <= 0) break;
        const int32_t have = int32_t(s->kv.tail_tokens.size());
        if (!s->prompt_done() || s->kv.num_tail_computed >= have) continue;
        if (int32_t(s->kv.tail_blocks.size()) * kv_.block_size() < have) continue;  // waits for room
        tails.push_back({s.get(), s->kv.num_tail_computed, s->kv.num_tail_computed + 1, false});
        --budget;
    }
    for (auto& [id, job] : jobs_) {  // then segment jobs, oldest first
        if (budget <= 0) break;
        if (job.done()) continue;
        const int32_t n = std::min<int32_t>(budget, int32_t(job.tokens.size()) - job.num_computed);
        add_plain_sequence(batch, {job.tokens.begin() + job.num_computed, job.tokens.begin() + job.num_computed + n},
                           job.num_computed, job.blocks, kv_.block_size(), 0);
        job_runs.push_back({id, n});
        budget -= n;
    }
    for (auto& s : running_) {  // then prompt tails whose segments are ready
        if (budget <= 0) break;
        if (s->prompt_done() || !s->segments_ready()) continue;
        if (config_.cache_mode == CacheMode::kBlockAttn && !s->materialized) continue;
        const int32_t begin = s->kv.num_tail_computed;
        const int32_t end = std::min(s->kv.num_prompt_tail, begin + budget);
        tails.push_back({s.get(), begin, end, s->want_all_tail_logits});
        budget -= end - begin;
    }
    for (const TailRun& t : tails) add_tail_rows(batch, *t.seq, t.begin, t.end, t.all_logits);
    if (batch.num_rows() == 0) return !waiting_.empty();

    std::vector<float>& logits = step_logits_;
    const Status st = model_.forward(batch, kv_.storage(), &logits);
    LA_CHECK_MSG(st.ok(), "forward failed on a validated plan: %s", st.to_string().c_str());
    ++step_count_;
    ++stats_.batch_rows[bucket(batch.num_rows())];

    for (const JobRun& r : job_runs) on_job_progress(r.job_id, r.n);
    const int32_t vocab = model_.config().vocab_size;
    size_t logit_row = 0;
    for (const TailRun& t : tails) {
        SequenceState& s = *t.seq;
        const int32_t rows_with_logits = t.all_logits ? t.end - t.begin : 1;
        const float* last = logits.data() + (logit_row + rows_with_logits - 1) * vocab;
        if (t.all_logits) {
            s.tail_logits.insert(s.tail_logits.end(), logits.begin() + logit_row * vocab, logits.begin() + (last - logits.data()) + vocab);
        }
        logit_row += rows_with_logits;
        const bool was_prompt = !s.prompt_done();
        s.kv.num_tail_computed = t.end;
        stats_.prompt_tokens_computed += was_prompt ? t.end - t.begin : 0;
        if (was_prompt && s.prompt_done() && config_.cache_mode != CacheMode::kNone) {
            const kv::BlockHash seed = segments_are_blocks(config_.cache_mode)
                                           ? kv::hash_segment_list(tail_seed_, s.request.segments)
                                           : prefix_seed_;
            kv_.publish(seed, std::span<const int32_t>(s.kv.tail_tokens.data(), s.kv.num_prompt_tail), s.kv.tail_blocks,
                        false);
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
    if (!job.done()) return;
    kv_.publish(job.seed, job.tokens, job.blocks, true);
    for (auto& s : running_) {
        for (int64_t& j : s->segment_jobs) {
            if (j == job_id) j = -1;
        }
    }
    kv_.release(job.blocks);  // the users keep their own references
    jobs_.erase(it);
}

void Scheduler::on_tail_logits(SequenceState& s, const float* logits) {
    const RagRequest& r = s.request;
    if (s.num_generated >= r.max_tokens) {
        finish(s, "length");
        return;
    }
    const int32_t token = s.sampler->sample(logits, model_.config().vocab_size, s.history);
    if (s.num_generated++ == 0) s.t_first_token = now_ms();
    s.history.push_back(token);
    if (!r.ignore_eos && tokenizer_.is_end_of_generation(token)) {
        s.handle->push_token(token, "");
        finish(s, "stop");
        return;
    }
    s.handle->push_token(token, s.stops->push(s.decoder->push(token)));
    if (s.stops->stopped()) {
        finish(s, "stop");
    } else if (s.num_generated >= r.max_tokens || s.kv.next_position() >= model_.config().context_length) {
        finish(s, "length");
    } else {
        s.kv.tail_tokens.push_back(token);  // computed by the next step
    }
}

}  // namespace lazyattn::engine
