#include "engine/runner/input_builder.h"

#include <algorithm>

#include "core/check.h"
#include "engine/runner/batch_builder.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {
namespace {

class Layout {
public:
    Layout(const LayoutRules& rules, StepInputs& in) : rules_(rules), bs_(rules.block_size), in_(in) {}

    void job(const JobChunk& c) {
        const SegmentJob& job = *c.job;
        const std::vector<int32_t> tokens(job.tokens.begin() + c.begin, job.tokens.begin() + c.end);
        if (job.anchor_tokens > 0) {
            add_anchored_sequence(in_.batch, tokens, c.begin, job.blocks, {job.anchor_blocks, job.anchor_tokens}, bs_,
                                  job.keys_from_zero);
        } else {
            add_plain_sequence(in_.batch, tokens, c.begin, job.blocks, bs_, 0);
        }
    }

    // Rows [begin, end) of s's recomputed document tokens (all documents' in order), no logits.
    // One sequence over the whole layout: each row sees what precedes its position (the
    // preamble, earlier documents with their recomputed rows, its own document's earlier rows);
    // later spans start past it and are masked by position.
    void patch(const SequenceState& s, int32_t begin, int32_t end) {
        model::ForwardBatch& b = in_.batch;
        const int32_t span_begin = int32_t(b.spans.size());
        segment_spans(b, s);
        b.seqs.push_back({b.num_rows(), end - begin, span_begin, int32_t(b.spans.size())});
        int32_t j = 0;  // index over every segment's recomputed tokens
        for (size_t d = 0; d < s.kv.segments.size() && j < end; ++d) {
            const SegmentPlacement& place = s.kv.segments[d];
            for (int32_t i = 0; i < place.patch_tokens; ++i, ++j) {
                if (j < begin || j >= end) continue;
                const int32_t token = place.patch_rows[size_t(i)];
                // A sparse row is read through the segment's span: keys in its rotation frame.
                const int32_t stored = (place.sparse_patch ? place.stored_base : place.logical_start) + token;
                row(b, s.request.segments[d][size_t(token)], place.logical_start + token, stored,
                    slot_of(place.patch_blocks, i, bs_));
            }
        }
    }

    // KV-deviation rows [begin, end) of s (its documents with a budget, every token, in order),
    // each placed as a patch row would be (everything before it in view, as cached), but its slot
    // is its cached copy's, read to compare, never written.
    int32_t deviation(const SequenceState& s, int32_t begin, int32_t end) {
        model::ForwardBatch& b = in_.measure;
        const int32_t first = b.num_rows();
        const int32_t span_begin = int32_t(b.spans.size());
        segment_spans(b, s);
        b.seqs.push_back({first, end - begin, span_begin, int32_t(b.spans.size())});
        b.keys_rotated = rules_.keys_rotated;
        int32_t j = 0;  // index over the measured documents' tokens
        for (size_t d = 0; d < s.kv.segments.size() && j < end; ++d) {
            const SegmentPlacement& place = s.kv.segments[d];
            const int32_t n = int32_t(place.selection_score.size());
            for (int32_t t = std::max(0, begin - j); t < n && j + t < end; ++t) {
                row(b, s.request.segments[d][size_t(t)], place.logical_start + t, place.stored_base + t,
                    slot_of(place.blocks, t, bs_));
            }
            j += n;
        }
        return first;
    }

    // The probe's rows (the prompt tail's [begin, end) against the cached documents), the last
    // kProbeMeasuredRows of the prompt tail measured (batch.mass_seqs): the mass costs rows x
    // keys per layer on the host, so a long tail cannot make it unbounded. Rows before them run
    // as a plain sequence (their K/V are what the measured rows attend to).
    void probe(const SequenceState& s, int32_t begin, int32_t end, ChunkLayout& layout) {
        model::ForwardBatch& b = in_.batch;
        const int32_t measure_from = std::max(0, s.kv.num_prompt_tail() - kProbeMeasuredRows);
        if (begin < measure_from) tail_sequence(s, begin, std::min(end, measure_from));
        if (end <= measure_from) return;
        // Where the mass of this sequence starts: after the earlier probes' sequences.
        int64_t offset = 0;
        for (const int32_t q : b.mass_seqs) offset += keys_of(b.seqs[size_t(q)]);
        b.mass_seqs.push_back(int32_t(b.seqs.size()));
        tail_sequence(s, std::max(begin, measure_from), end);
        layout.mass_offset = offset;
        layout.mass_count = keys_of(b.seqs.back());
    }

    void tail(const PhaseChunk& c) {
        const int32_t first_row = tail_sequence(*c.seq, c.begin, c.end);
        for (int32_t t = c.begin; t < c.end; ++t) {
            if (c.all_logits || t == c.end - 1) in_.batch.logit_rows.push_back(first_row + t - c.begin);
        }
    }

private:
    void row(model::ForwardBatch& b, int32_t token, int32_t position, int32_t stored, int32_t slot) {
        b.token_ids.push_back(token);
        b.positions.push_back(position);
        b.store_positions.push_back(stored);
        b.slot_mapping.push_back(slot);
    }

    int64_t keys_of(const kernels::AttentionSeq& seq) const {
        int64_t n = 0;
        for (int32_t si = seq.span_begin; si < seq.span_end; ++si) n += in_.batch.spans[size_t(si)].num_tokens;
        return n;
    }

    // Tail rows [begin, end) of s as one sequence over its segments and the tail's own blocks,
    // no logits; returns the first row.
    int32_t tail_sequence(const SequenceState& s, int32_t begin, int32_t end) {
        model::ForwardBatch& b = in_.batch;
        const RequestKv& ar = s.kv;
        const int32_t span_begin = int32_t(b.spans.size());
        const int32_t first_row = b.num_rows();
        segment_spans(b, s);
        add_span(b, ar.tail_blocks, 0, end, ar.tail_start, ar.tail_start, bs_);
        b.seqs.push_back({first_row, end - begin, span_begin, int32_t(b.spans.size())});
        for (int32_t t = begin; t < end; ++t) {
            row(b, ar.tail_tokens[size_t(t)], ar.tail_start + t, ar.tail_start + t, slot_of(ar.tail_blocks, t, bs_));
        }
        return first_row;
    }

    // The spans of s's segments as its tail, probe, patch and deviation rows read them.
    void segment_spans(model::ForwardBatch& b, const SequenceState& s) {
        const DocumentReuse& reuse = s.request.reuse;
        for (size_t d = 0; d < s.kv.segments.size(); ++d) {
            const SegmentPlacement& place = s.kv.segments[d];
            const bool document = s.request.is_document(d);
            auto add = [&](const std::vector<kv::BlockId>& blocks, int32_t first_block, int32_t n, int32_t logical,
                           int32_t stored) {
                const int32_t i = add_span(b, blocks, first_block, n, logical, stored, bs_);
                if (i >= 0 && document) {
                    b.spans[size_t(i)].logit_scale = reuse.logit_scale;
                    b.spans[size_t(i)].logit_bias = reuse.logit_bias;
                }
            };
            const int32_t r = int32_t(place.patch_rows.size());  // none yet while a measurement runs
            if (place.sparse_patch && r > 0) {
                // The whole segment from where it is cached, its recomputed rows overriding.
                add(place.blocks, 0, place.num_tokens, place.logical_start, place.stored_base);
                b.spans.back().override_begin = int32_t(b.overrides.size());
                b.spans.back().override_count = r;
                for (int32_t j = 0; j < r; ++j) {
                    b.overrides.push_back({place.patch_rows[size_t(j)], slot_of(place.patch_blocks, j, bs_)});
                }
                continue;
            }
            // Recomputed first tokens (whole blocks, or the whole segment) from the request's own
            // blocks, the rest of the segment from where it is cached.
            add(place.patch_blocks, 0, r, place.logical_start, place.logical_start);
            add(place.blocks, r / bs_, place.num_tokens - r, place.logical_start + r, place.stored_base + r);
        }
    }

    const LayoutRules& rules_;
    const int32_t bs_;
    StepInputs& in_;
};

}  // namespace

StepInputs build_step_inputs(const SchedulerOutput& step, const LayoutRules& rules) {
    StepInputs in;
    in.batch.keys_rotated = rules.keys_rotated;
    in.chunks.resize(step.chunks.size());
    Layout layout(rules, in);
    for (const JobChunk& c : step.jobs) layout.job(c);
    for (size_t i = 0; i < step.chunks.size(); ++i) {
        const PhaseChunk& c = step.chunks[i];
        switch (c.kind) {
            case PhaseKind::kDeviation:
                in.chunks[i].measure_row = layout.deviation(*c.seq, c.begin, c.end);
                break;
            case PhaseKind::kProbe:
                layout.probe(*c.seq, c.begin, c.end, in.chunks[i]);
                break;
            case PhaseKind::kPatch:
                layout.patch(*c.seq, c.begin, c.end);
                break;
            case PhaseKind::kTail:
                break;  // after every other row: logits in tail order
        }
    }
    for (const PhaseChunk& c : step.chunks) {
        if (c.kind == PhaseKind::kTail) layout.tail(c);
    }
    if (!in.batch.mass_seqs.empty()) in.batch.mass_layers = rules.mass_layers;
    in.batch.kv_copies = step.kv_copies;
    return in;
}

void split_measurements(const StepInputs& inputs, const SchedulerOutput& step, const std::vector<float>& key_mass,
                        const std::vector<float>& kv_deviation, std::vector<ChunkResult>& results) {
    LA_CHECK(results.size() == step.chunks.size());
    for (size_t i = 0; i < step.chunks.size(); ++i) {
        const ChunkLayout& at = inputs.chunks[i];
        std::vector<float>& out = results[i].measured;
        if (step.chunks[i].kind == PhaseKind::kProbe && at.mass_offset >= 0) {
            LA_CHECK(at.mass_offset + at.mass_count <= int64_t(key_mass.size()));
            out.assign(key_mass.begin() + at.mass_offset, key_mass.begin() + at.mass_offset + at.mass_count);
        } else if (step.chunks[i].kind == PhaseKind::kDeviation) {
            const int64_t n = step.chunks[i].rows();
            LA_CHECK(at.measure_row >= 0 && at.measure_row + n <= int64_t(kv_deviation.size()));
            out.assign(kv_deviation.begin() + at.measure_row, kv_deviation.begin() + at.measure_row + n);
        }
    }
}

}  // namespace lazyattn::engine
