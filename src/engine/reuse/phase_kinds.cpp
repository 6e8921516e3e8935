// The phase table (phase_kinds.h): each kind's row and hooks, then the lookups and plan_phases.
#include "engine/reuse/phase_kinds.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "core/check.h"
#include "engine/sequence/sequence_state.h"
#include "kv/kv_shape.h"
#include "model/model.h"

namespace lazyattn::engine {
namespace {

// Keys a sequence of the batch reads (its spans' tokens).
int64_t keys_of(const model::ForwardBatch& b, const kernels::AttentionSeq& seq) {
    int64_t n = 0;
    for (int32_t si = seq.span_begin; si < seq.span_end; ++si) n += b.spans[size_t(si)].num_tokens;
    return n;
}

// --- patch: rows [begin, end) of s's recomputed document tokens (all documents' in order), no
// logits. One sequence over the whole layout: each row sees what precedes its position (the
// preamble, earlier documents with their recomputed rows, its own document's earlier rows);
// later spans start past it and are masked by position.
void patch_layout(PhaseLayout& at, PhaseKind, const SequenceState& s, int32_t begin, int32_t end, ChunkLayout&) {
    model::ForwardBatch& b = at.forward();
    const int32_t bs = at.block_size();
    const int32_t span_begin = int32_t(b.spans.size());
    at.segment_spans(b, s);
    b.seqs.push_back({b.num_rows(), end - begin, span_begin, int32_t(b.spans.size())});
    int32_t j = 0;  // index over every segment's recomputed tokens
    for (size_t d = 0; d < s.kv.segments.size() && j < end; ++d) {
        const SegmentPlacement& place = s.kv.segments[d];
        for (int32_t i = 0; i < place.patch_tokens; ++i, ++j) {
            if (j < begin || j >= end) continue;
            const int32_t token = place.patch_rows[size_t(i)];
            // A sparse row is read through the segment's span: keys in its rotation frame.
            const int32_t stored = (place.sparse_patch ? place.stored_base : place.logical_start) + token;
            PhaseLayout::row(b, s.request.segments[d][size_t(token)], place.logical_start + token, stored,
                             kv::slot_of(place.patch_blocks, i, bs));
        }
    }
}

// --- deviation (@deviation, CacheBlend's): every token of the documents with a budget, run with
// everything before it in view (placed as a patch row would be, as cached) up to
// Model::kDeviationLayer, its K/V there compared with its cached copy, whose slot it reads and
// never writes. Its rows run apart (Model::measure_kv_deviation), one deviation each.
bool serves_deviation(RecomputeSelect select) { return select == RecomputeSelect::kDeviation; }

int32_t deviation_rows(const RequestKv& placement, const PhasePlan& plan) {
    int32_t n = 0;
    for (size_t d = 0; d < plan.segments.size(); ++d) {
        if (plan.segments[d].measured) n += placement.segments[d].num_tokens;
    }
    return n;
}

bool deviation_supported(const model::Model& m) {
    return m.backend().kv_deviation_supported() && m.config().num_layers > model::Model::kDeviationLayer;
}

// Rows [begin, end) over the measured documents' tokens, in segment order.
void deviation_layout(PhaseLayout& at, PhaseKind kind, const SequenceState& s, int32_t begin, int32_t end,
                      ChunkLayout& where) {
    model::ForwardBatch& b = at.apart(kind);
    const int32_t bs = at.block_size();
    const int32_t first = b.num_rows();
    const int32_t span_begin = int32_t(b.spans.size());
    at.segment_spans(b, s);
    b.seqs.push_back({first, end - begin, span_begin, int32_t(b.spans.size())});
    int32_t j = 0;  // index over the measured documents' tokens
    for (size_t d = 0; d < s.kv.segments.size() && j < end; ++d) {
        const SegmentPlacement& place = s.kv.segments[d];
        const int32_t n = int32_t(place.selection_score.size());
        for (int32_t t = std::max(0, begin - j); t < n && j + t < end; ++t) {
            PhaseLayout::row(b, s.request.segments[d][size_t(t)], place.logical_start + t, place.stored_base + t,
                             kv::slot_of(place.blocks, t, bs));
        }
        j += n;
    }
    where.offset = first;
    where.count = end - begin;
}

Status deviation_measure(model::Model& m, const model::ForwardBatch& rows, backend::KvMemory& kv,
                         std::vector<float>* measured) {
    return m.measure_kv_deviation(rows, kv, measured);
}

void deviation_record(SequenceState& s, int32_t begin, int32_t end, const std::vector<float>& measured) {
    LA_CHECK(int32_t(measured.size()) == end - begin);
    int32_t j = 0;
    for (SegmentPlacement& place : s.kv.segments) {
        const int32_t n = int32_t(place.selection_score.size());
        for (int32_t t = std::max(0, begin - j); t < n && j + t < end; ++t) {
            place.selection_score[size_t(t)] = measured[size_t(j + t - begin)];
        }
        j += n;
    }
    s.stats.deviation_rows += end - begin;
}

// --- probe (@query, @query-all, @first-query): the prompt tail against the cached documents, the
// attention mass its last kProbeMeasuredRows rows give each key measured in the forward
// (batch.mass_seqs: the mass costs rows x keys per layer on the host, so a long tail cannot make
// it unbounded). Rows before them run as a plain sequence (their K/V are what the measured rows
// attend to). It writes the tail's rows, which the tail phase then computes again.
bool serves_probe(RecomputeSelect select) {
    return select == RecomputeSelect::kQuery || select == RecomputeSelect::kQueryAll ||
           select == RecomputeSelect::kFirstQuery;
}

int32_t probe_rows(const RequestKv& placement, const PhasePlan& plan) {
    const bool any = std::any_of(plan.segments.begin(), plan.segments.end(), [](const auto& p) { return p.measured; });
    return any ? placement.num_prompt_tail() : 0;
}

bool probe_supported(const model::Model& m) { return m.backend().attention_mass_supported(); }

void probe_layout(PhaseLayout& at, PhaseKind, const SequenceState& s, int32_t begin, int32_t end, ChunkLayout& where) {
    model::ForwardBatch& b = at.forward();
    const int32_t measure_from = std::max(0, s.kv.num_prompt_tail() - kProbeMeasuredRows);
    if (begin < measure_from) at.tail_sequence(s, begin, std::min(end, measure_from));
    if (end <= measure_from) return;
    // Where the mass of this sequence starts: after the earlier probes' sequences.
    int64_t offset = 0;
    for (const int32_t q : b.mass_seqs) offset += keys_of(b, b.seqs[size_t(q)]);
    b.mass_seqs.push_back(int32_t(b.seqs.size()));
    at.tail_sequence(s, std::max(begin, measure_from), end);
    where.offset = offset;
    where.count = keys_of(b, b.seqs.back());
}

// The mass of the probe's keys: each segment's tokens in order (one span each while no rows are
// recomputed), then the tail's; the documents' is summed over the probe's chunks.
void probe_record(SequenceState& s, int32_t begin, int32_t end, const std::vector<float>& measured) {
    if (!measured.empty()) {  // else no row of this chunk is measured
        size_t k = 0;
        for (SegmentPlacement& place : s.kv.segments) {
            LA_CHECK(k + size_t(place.num_tokens) <= measured.size());
            for (size_t t = 0; t < place.selection_score.size(); ++t) place.selection_score[t] += measured[k + t];
            k += size_t(place.num_tokens);
        }
    }
    s.stats.prefill_tokens += end - begin;
}

// The table, in PhaseKind order: the tail and the patch phase first (PhaseKind::kTail, kPatch),
// then the measurements.
const PhaseKindRow kKinds[] = {
    {.name = "tail"},
    {.name = "patch", .layout = patch_layout},
    // A KV-deviation row runs one layer and a third of the next (Model::measure_kv_deviation), so 8
    // of them count as one row: that keeps a step's work near its budget on models of 12 layers
    // and more (SmolLM2-135M has 30, where 8 is ~1/2 a row).
    {.name = "deviation",
     .rows_per_budget_token = 8,
     .apart = true,
     .serves = serves_deviation,
     .rows = deviation_rows,
     .supported = deviation_supported,
     .refusal = "recompute selected by KV deviation (@deviation) measures the cached KV on the host, in the model's "
                "second layer; this backend or model cannot (use --device cpu, or @first / @random)",
     .layout = deviation_layout,
     .measure = deviation_measure,
     .record = deviation_record},
    {.name = "probe",
     .writes_tail = true,
     .serves = serves_probe,
     .rows = probe_rows,
     .supported = probe_supported,
     .refusal = "recompute selected by the question (@query) measures attention on the host; this backend cannot "
                "(use --device cpu, or @first / @random)",
     .layout = probe_layout,
     .record = probe_record},
};
constexpr int32_t kNumKinds = int32_t(std::size(kKinds));
static_assert(kNumKinds <= 32, "ModelFacts::measurements holds one bit per kind");

}  // namespace

const PhaseKindRow& phase_kind(PhaseKind kind) {
    LA_CHECK(kind.row < kNumKinds);
    return kKinds[kind.row];
}

int32_t num_phase_kinds() { return kNumKinds; }

std::optional<PhaseKind> measurement_for(RecomputeSelect select) {
    for (int32_t k = 0; k < kNumKinds; ++k) {
        if (kKinds[k].measures() && kKinds[k].serves(select)) return PhaseKind{uint8_t(k)};
    }
    return std::nullopt;
}

bool measurement_writes_tail(RecomputeSelect select) {
    const auto m = measurement_for(select);
    return m.has_value() && phase_kind(*m).writes_tail;
}

uint32_t supported_measurements(const model::Model& model) {
    uint32_t bits = 0;
    for (int32_t k = 0; k < kNumKinds; ++k) {
        if (kKinds[k].measures() && kKinds[k].supported != nullptr && kKinds[k].supported(model)) bits |= 1u << k;
    }
    return bits;
}

PhasePlan plan_phases(const RagRequest& r, const RequestKv& placement, int32_t block_size) {
    PhasePlan plan;
    const std::optional<PhaseKind> measurement = measurement_for(r.reuse.recompute_select);
    // recompute_rows leaves a measured selection's rows to its measurement: the two must agree.
    LA_CHECK_MSG(measurement.has_value() == selected_by_measure(r.reuse.recompute_select),
                 "selection '%s' is measured but has no row in the phase table",
                 std::string(select_name(r.reuse.recompute_select)).c_str());
    plan.sparse = !reuse_splits_spans(r.reuse);
    plan.segments.resize(placement.segments.size());
    PrefillPhase patch{PhaseKind::kPatch};
    bool measures = false;  // some document has a budget a measurement chooses rows within
    for (size_t d = 0; d < plan.segments.size(); ++d) {
        PhasePlan::Segment& seg = plan.segments[d];
        seg.patch_rows = r.recompute_rows(d, block_size);
        // Chosen by a measurement: room for the most rows it may choose; which ones, it decides.
        seg.room = measurement ? r.recompute_room(d, block_size) : int32_t(seg.patch_rows.size());
        if (seg.room == 0) continue;
        seg.measured = measurement.has_value();
        measures |= seg.measured;
        patch.total += int32_t(seg.patch_rows.size());
    }
    if (measures) {
        const int32_t rows = phase_kind(*measurement).rows(placement, plan);
        if (rows > 0) plan.phases.push_back({*measurement, rows, 0});
    }
    // After a measurement, the patch phase runs what it chooses (possibly nothing).
    if (patch.total > 0 || measures) plan.phases.push_back(patch);
    return plan;
}

}  // namespace lazyattn::engine
