// Scheduler: planning one step's rows under the token budget. Decode rows come first (one per
// running request). Prefill work takes the rest, at most max_prefill_while_decoding rows when
// the step has decode rows (each decode row waits for the whole step: without the cap, a
// request's output tokens came one per 512-row prefill step while others' documents were
// computed, TPOT 118-149 ms against 30-40 ms for decode-only steps in the RAG benchmark), in
// first-come order, each unfinished segment job
// (oldest first) and each prompt tail whose segments are ready (in admission order) being an
// item, but no item takes more than half the budget in one turn; turns repeat while budget and
// work remain. So one long document cannot hold the prompts behind it back (they get the other
// half every step), a lone item still gets the whole budget, and otherwise work finishes in
// arrival order: sharing the budget equally among all items (tried first) doubled the load
// test's TTFT p50 (0.40 s -> 0.90 s), since every request's prefill then ends late.
#include <algorithm>

#include "engine/runner/batch_builder.h"
#include "engine/scheduler/scheduler.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {
namespace {

struct PrefillItem {
    int64_t job_id = -1;           // a segment job, or
    SequenceState* seq = nullptr;  // a prompt tail (or its recomputed document tokens: patch)
    int32_t done = 0;              // tokens computed before this step
    int32_t left = 0;              // tokens still to compute
    int32_t take = 0;              // tokens planned this step
    bool patch = false;
    bool probe = false;      // the prompt tail's probe (selection by the question)
    bool deviation = false;  // KV-deviation rows, counted kDeviationRowsPerToken to a token
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

void Scheduler::add_segment_spans(model::ForwardBatch& b, const SequenceState& s) {
    const int32_t bs = kv_.block_size();
    const DocumentReuse& reuse = s.request.reuse;
    for (size_t d = 0; d < s.kv.segments.size(); ++d) {
        const SegmentPlacement& place = s.kv.segments[d];
        const bool document = !(d == 0 && s.request.first_segment_is_preamble);
        auto add = [&](const std::vector<kv::BlockId>& blocks, int32_t first_block, int32_t n, int32_t logical,
                       int32_t stored) {
            if (n <= 0) return;
            b.spans.push_back({int32_t(b.block_ids.size()), n, logical, stored});
            if (document) {
                b.spans.back().logit_scale = reuse.logit_scale;
                b.spans.back().logit_bias = reuse.logit_bias;
            }
            b.block_ids.insert(b.block_ids.end(), blocks.begin() + first_block,
                               blocks.begin() + first_block + (n + bs - 1) / bs);
        };
        const int32_t r = int32_t(place.patch_rows.size());  // none yet while a probe runs
        if (place.sparse_patch && r > 0) {
            // The whole segment from where it is cached, its recomputed rows overriding.
            add(place.blocks, 0, place.num_tokens, place.logical_start, place.stored_base);
            b.spans.back().override_begin = int32_t(b.overrides.size());
            b.spans.back().override_count = r;
            for (int32_t j = 0; j < r; ++j) {
                b.overrides.push_back({place.patch_rows[j], place.patch_blocks[j / bs] * bs + j % bs});
            }
            continue;
        }
        // Recomputed first tokens (whole blocks, or the whole segment) from the request's own
        // blocks, the rest of the segment from where it is cached.
        add(place.patch_blocks, 0, r, place.logical_start, place.logical_start);
        add(place.blocks, r / bs, place.num_tokens - r, place.logical_start + r, place.stored_base + r);
    }
}

void Scheduler::add_patch_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end) {
    // One sequence over the whole layout: each row sees what precedes its position (the
    // preamble, earlier documents with their recomputed rows, its own document's earlier rows);
    // later spans start past it and are masked by position.
    const int32_t bs = kv_.block_size();
    const int32_t span_begin = int32_t(b.spans.size());
    add_segment_spans(b, s);
    b.seqs.push_back({b.num_rows(), end - begin, span_begin, int32_t(b.spans.size())});
    int32_t j = 0;  // index over every segment's recomputed tokens
    for (size_t d = 0; d < s.kv.segments.size() && j < end; ++d) {
        const SegmentPlacement& place = s.kv.segments[d];
        for (int32_t i = 0; i < place.patch_tokens; ++i, ++j) {
            if (j < begin || j >= end) continue;
            const int32_t token = place.patch_rows[i];
            b.token_ids.push_back(s.request.segments[d][token]);
            b.positions.push_back(place.logical_start + token);
            // A sparse row is read through the segment's span: keys in its rotation frame.
            b.store_positions.push_back((place.sparse_patch ? place.stored_base : place.logical_start) + token);
            b.slot_mapping.push_back(place.patch_blocks[i / bs] * bs + i % bs);
        }
    }
}

void Scheduler::add_deviation_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end) {
    // As a patch row would be placed (one sequence over the whole layout: each row sees the
    // preamble, earlier documents and its own document's earlier tokens, all as cached), but
    // its slot is its cached copy's, read to compare, never written.
    const int32_t bs = kv_.block_size();
    const int32_t span_begin = int32_t(b.spans.size());
    add_segment_spans(b, s);
    b.seqs.push_back({b.num_rows(), end - begin, span_begin, int32_t(b.spans.size())});
    b.keys_rotated = keys_stored_rotated(config_.cache_mode);
    int32_t j = 0;  // index over the measured documents' tokens
    for (size_t d = 0; d < s.kv.segments.size() && j < end; ++d) {
        const SegmentPlacement& place = s.kv.segments[d];
        const int32_t n = int32_t(place.selection_score.size());
        for (int32_t t = std::max(0, begin - j); t < n && j + t < end; ++t) {
            b.token_ids.push_back(s.request.segments[d][t]);
            b.positions.push_back(place.logical_start + t);
            b.store_positions.push_back(place.stored_base + t);
            b.slot_mapping.push_back(place.blocks[t / bs] * bs + t % bs);
        }
        j += n;
    }
}

void Scheduler::add_tail_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end, bool all_logits) {
    const int32_t first_row = add_tail_sequence(b, s, begin, end);
    for (int32_t t = begin; t < end; ++t) {
        if (all_logits || t == end - 1) b.logit_rows.push_back(first_row + t - begin);
    }
}

int64_t Scheduler::add_probe_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end) {
    // Only the prompt tail's last kProbeMeasuredRows rows are measured (the question ends the
    // tail): the mass costs rows x keys per layer on the host, so a long tail cannot make it
    // unbounded. Rows before them run as a plain sequence (their K/V are what the measured rows
    // attend to).
    const int32_t measure_from = std::max(0, s.kv.num_prompt_tail - kProbeMeasuredRows);
    if (begin < measure_from) add_tail_sequence(b, s, begin, std::min(end, measure_from));
    if (end <= measure_from) return -1;
    // Where the mass of this sequence starts: after the earlier probes' sequences.
    int64_t offset = 0;
    for (const int32_t q : b.mass_seqs) {
        for (int32_t si = b.seqs[q].span_begin; si < b.seqs[q].span_end; ++si) offset += b.spans[si].num_tokens;
    }
    b.mass_seqs.push_back(int32_t(b.seqs.size()));
    add_tail_sequence(b, s, std::max(begin, measure_from), end);
    return offset;
}

int32_t Scheduler::add_tail_sequence(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end) {
    const int32_t bs = kv_.block_size();
    const RequestKv& ar = s.kv;
    const int32_t span_begin = int32_t(b.spans.size());
    const int32_t first_row = b.num_rows();
    add_segment_spans(b, s);
    b.spans.push_back({int32_t(b.block_ids.size()), end, ar.tail_start, ar.tail_start});
    b.block_ids.insert(b.block_ids.end(), ar.tail_blocks.begin(), ar.tail_blocks.begin() + (end + bs - 1) / bs);
    b.seqs.push_back({first_row, end - begin, span_begin, int32_t(b.spans.size())});
    for (int32_t t = begin; t < end; ++t) {
        b.token_ids.push_back(ar.tail_tokens[t]);
        b.positions.push_back(ar.tail_start + t);
        b.store_positions.push_back(ar.tail_start + t);
        b.slot_mapping.push_back(ar.tail_blocks[t / bs] * bs + t % bs);
    }
    return first_row;
}

TailChunk Scheduler::tail_chunk(SequenceState& s, int32_t begin, int32_t end, bool all_logits) const {
    TailChunk t{&s, begin, end, all_logits};
    // The last prompt row (or a decode row) yields the next token, unless max_tokens is reached.
    t.sample = end >= s.kv.num_prompt_tail && s.num_generated < s.request.max_tokens;
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
    plan.batch.keys_rotated = keys_stored_rotated(config_.cache_mode);
    int32_t budget = config_.max_batch_tokens;
    for (auto& s : running_) {  // decode first
        if (budget <= 0) break;
        const int32_t have = int32_t(s->kv.tail_tokens.size());
        if (!s->prompt_done() || s->kv.num_tail_computed >= have) continue;
        if (int32_t(s->kv.tail_blocks.size()) * kv_.block_size() < have) continue;  // waits for room
        plan.tails.push_back(tail_chunk(*s, s->kv.num_tail_computed, s->kv.num_tail_computed + 1, false));
        --budget;
    }
    plan.num_decode_rows = int32_t(plan.tails.size());
    if (plan.num_decode_rows > 0 && config_.max_prefill_while_decoding > 0) {
        budget = std::min(budget, config_.max_prefill_while_decoding);
    }
    plan_prefill(plan, budget);
    for (const TailChunk& t : plan.tails) add_tail_rows(plan.batch, *t.seq, t.begin, t.end, t.all_logits);
    if (!plan.probes.empty()) plan.batch.mass_layers = config_.query_mass_layers;
    return plan;
}

void Scheduler::plan_prefill(SchedulerOutput& plan, int32_t budget) {
    std::vector<PrefillItem> items;
    for (const auto& [id, job] : kv_.jobs()) {
        // An anchored document waits for its preamble's job (which, older, comes first), a
        // conditioned one for its neighbours' prefix.
        if (job.done() || (job.anchor_job >= 0 && kv_.jobs().count(job.anchor_job) > 0)) continue;
        items.push_back({id, nullptr, job.num_computed, int32_t(job.tokens.size()) - job.num_computed});
    }
    for (auto& s : running_) {
        if (s->prompt_done() || !s->segments_ready()) continue;
        if (config_.cache_mode == CacheMode::kBlockAttn && !s->materialized) continue;
        const RequestKv& ar = s->kv;
        if (ar.awaiting_patches) continue;  // a sibling choice computes its recomputed rows
        if (ar.deviation_pending()) {       // selection by KV deviation: measured before the patches
            const int32_t per = kDeviationRowsPerToken;
            PrefillItem it{-1, s.get(), ar.num_deviation_computed,
                           (ar.num_deviation_rows - ar.num_deviation_computed + per - 1) / per};
            it.deviation = true;
            items.push_back(it);
            continue;
        }
        if (ar.probe_pending) {  // selection by the question: the probe comes before the patches
            items.push_back(
                {-1, s.get(), ar.num_probe_computed, ar.num_prompt_tail - ar.num_probe_computed, 0, false, true});
            continue;
        }
        if (!ar.patches_done()) {  // recomputed document tokens come before the tail
            items.push_back({-1, s.get(), ar.num_patch_computed, ar.num_patch_tokens - ar.num_patch_computed, 0, true});
            continue;
        }
        items.push_back({-1, s.get(), ar.num_tail_computed, ar.num_prompt_tail - ar.num_tail_computed});
    }
    if (items.empty() || budget <= 0) return;
    share_budget(items, budget, std::max(kv_.block_size(), budget / 2));
    for (const PrefillItem& it : items) {
        if (it.take == 0) continue;
        if (it.seq != nullptr && it.deviation) {
            const int32_t end = std::min(it.seq->kv.num_deviation_rows, it.done + it.take * kDeviationRowsPerToken);
            plan.deviations.push_back({it.seq, it.done, end, plan.measure.num_rows()});
            add_deviation_rows(plan.measure, *it.seq, it.done, end);
            continue;
        }
        if (it.seq != nullptr && it.probe) {
            const int64_t offset = add_probe_rows(plan.batch, *it.seq, it.done, it.done + it.take);
            plan.probes.push_back({it.seq, it.take, offset});
            continue;
        }
        if (it.seq != nullptr && it.patch) {
            add_patch_rows(plan.batch, *it.seq, it.done, it.done + it.take);
            plan.patches.push_back({it.seq, it.take});
            continue;
        }
        if (it.seq != nullptr) {
            plan.tails.push_back(tail_chunk(*it.seq, it.done, it.done + it.take, it.seq->all_tail_rows()));
            continue;
        }
        const SegmentJob& job = kv_.jobs().at(it.job_id);
        const std::vector<int32_t> chunk(job.tokens.begin() + it.done, job.tokens.begin() + it.done + it.take);
        if (job.anchor_tokens > 0) {
            add_anchored_sequence(plan.batch, chunk, it.done, job.blocks, {job.anchor_blocks, job.anchor_tokens},
                                  kv_.block_size(), job.keys_from_zero);
        } else {
            add_plain_sequence(plan.batch, chunk, it.done, job.blocks, kv_.block_size(), 0);
        }
        plan.jobs.push_back({it.job_id, it.take});
    }
}

}  // namespace lazyattn::engine
