#include "engine/runner/input_builder.h"

#include <algorithm>

#include "core/check.h"
#include "engine/runner/batch_builder.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {
namespace {

class Layout final : public PhaseLayout {
public:
    Layout(const LayoutRules& rules, StepInputs& in) : bs_(rules.block_size), in_(in) {}

    model::ForwardBatch& forward() override { return in_.batch; }
    model::ForwardBatch& apart(PhaseKind kind) override { return in_.apart[kind.row]; }
    int32_t block_size() const override { return bs_; }

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

    void tail(const PhaseChunk& c) {
        const int32_t first_row = tail_sequence(*c.seq, c.begin, c.end);
        for (int32_t t = c.begin; t < c.end; ++t) {
            if (c.all_logits || t == c.end - 1) in_.batch.logit_rows.push_back(first_row + t - c.begin);
        }
    }

    int32_t tail_sequence(const SequenceState& s, int32_t begin, int32_t end) override {
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

    void segment_spans(model::ForwardBatch& b, const SequenceState& s) override {
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
            // A document's first cached tokens, damped as the extra sinks they are (DocumentReuse::
            // damp_tokens), as a span of their own: whole blocks, so the split needs no kernel
            // change. Not at position 0 (the real sink), nor the recomputed ones (no sinks).
            const int32_t damped =
                document && place.logical_start > 0 ? std::max(0, reuse.damp_count(place.num_tokens, bs_) - r) : 0;
            if (damped > 0) {
                add(place.blocks, r / bs_, damped, place.logical_start + r, place.stored_base + r);
                b.spans.back().logit_bias += reuse.damp_bias;
            }
            const int32_t rest = r + damped;
            add(place.blocks, rest / bs_, place.num_tokens - rest, place.logical_start + rest,
                place.stored_base + rest);
        }
    }

private:
    const int32_t bs_;
    StepInputs& in_;
};

}  // namespace

StepInputs build_step_inputs(const SchedulerOutput& step, const LayoutRules& rules) {
    StepInputs in;
    in.batch.keys_rotated = rules.keys_rotated;
    in.apart.resize(size_t(num_phase_kinds()));
    for (model::ForwardBatch& b : in.apart) b.keys_rotated = rules.keys_rotated;
    in.chunks.resize(step.chunks.size());
    Layout layout(rules, in);
    for (const JobChunk& c : step.jobs) layout.job(c);
    for (size_t i = 0; i < step.chunks.size(); ++i) {
        const PhaseChunk& c = step.chunks[i];
        if (c.kind == PhaseKind::kTail) continue;  // after every other row: logits in tail order
        phase_kind(c.kind).layout(layout, c.kind, *c.seq, c.begin, c.end, in.chunks[i]);
    }
    for (const PhaseChunk& c : step.chunks) {
        if (c.kind == PhaseKind::kTail) layout.tail(c);
    }
    if (!in.batch.mass_seqs.empty()) in.batch.mass_layers = rules.mass_layers;
    in.batch.kv_copies = step.kv_copies;
    return in;
}

void split_measurements(const StepInputs& inputs, const SchedulerOutput& step, const std::vector<float>& key_mass,
                        const std::vector<std::vector<float>>& apart, std::vector<ChunkResult>& results) {
    LA_CHECK(results.size() == step.chunks.size());
    for (size_t i = 0; i < step.chunks.size(); ++i) {
        const ChunkLayout& at = inputs.chunks[i];
        if (at.offset < 0) continue;  // nothing of it measured
        const PhaseKind kind = step.chunks[i].kind;
        const std::vector<float>& from = phase_kind(kind).apart ? apart.at(kind.row) : key_mass;
        LA_CHECK(at.offset + at.count <= int64_t(from.size()));
        results[i].measured.assign(from.begin() + at.offset, from.begin() + at.offset + at.count);
    }
}

}  // namespace lazyattn::engine
