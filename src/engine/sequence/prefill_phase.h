// PrefillPhase: one stage of a request's prefill. A request's prefill is a list of phases built
// at admission, run in order, the tail last: a measured selection of recomputed rows first
// measures (kDeviation: every token of the documents with a budget, compared with its cached
// copy; kProbe: the prompt tail against the cached documents, its attention measured), then its
// recomputed document rows run (kPatch), then the prompt tail (kTail), whose counter keeps
// counting the generated tokens decode computes.
//
// A new way of selecting recomputed rows is a phase kind: its row layout (runner/input_builder),
// its result handler (Scheduler::on_measured) and its backend op; the planner hands budget to a
// request's first unfinished phase, whatever its kind.
#pragma once

#include <cstdint>

namespace lazyattn::engine {

enum class PhaseKind : uint8_t {
    kDeviation,  // KV deviation of the documents' tokens (@deviation); no KV written
    kProbe,      // the prompt tail against the cached documents, attention measured (@query)
    kPatch,      // recomputed document tokens (DocumentReuse::recompute), no logits
    kTail,       // the prompt tail, then one decode row per generated token
};

// Rows of the phase one token of a step's budget pays for: a KV-deviation row runs one layer
// and a third of the next (Model::measure_kv_deviation), so 8 of them count as one row: that
// keeps a step's work near its budget on models of 12 layers and more (SmolLM2-135M has 30,
// where 8 is ~1/2 a row). Every other phase's rows are full rows.
constexpr int32_t rows_per_budget_token(PhaseKind kind) { return kind == PhaseKind::kDeviation ? 8 : 1; }

struct PrefillPhase {
    PhaseKind kind = PhaseKind::kTail;
    int32_t total = 0;     // rows the phase computes (a patch phase's grows when its rows are chosen)
    int32_t computed = 0;  // rows done
    bool done() const { return computed >= total; }
};

}  // namespace lazyattn::engine
