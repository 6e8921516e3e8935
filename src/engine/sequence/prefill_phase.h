// PrefillPhase: one stage of a request's prefill. A request's prefill is a list of phases planned
// at admission (plan_phases), run in order, the tail last: a measured selection of recomputed
// rows first measures (a measurement phase: the documents' KV deviation, or the prompt tail's
// attention over the cached documents), then its recomputed document rows run (the patch phase),
// then the prompt tail (the tail phase), whose counter keeps counting the generated tokens
// decode computes.
//
// Each kind is one row of the phase table (reuse/phase_kinds.h), which holds everything that is
// the kind's own: its rows per budget token, the capability it needs, its layout and its result.
// The planner hands budget to a request's first unfinished phase, whatever its kind.
#pragma once

#include <cstdint>

namespace lazyattn::engine {

// A row of the phase table. The tail and the patch phase are named: the scheduler and the runner
// treat them apart (the tail's logits and sampling, the patch phase's rows that one choice shares
// with its siblings). A measurement is the row that serves the request's selection
// (measurement_for), so a new one is a row of the table and nothing else of the engine.
struct PhaseKind {
    uint8_t row = 0;
    static const PhaseKind kTail;   // the prompt tail, then one decode row per generated token
    static const PhaseKind kPatch;  // recomputed document tokens (DocumentReuse::recompute), no logits
    bool operator==(const PhaseKind&) const = default;
};
inline constexpr PhaseKind PhaseKind::kTail{0};
inline constexpr PhaseKind PhaseKind::kPatch{1};

struct PrefillPhase {
    PhaseKind kind = PhaseKind::kTail;
    int32_t total = 0;     // rows the phase computes (a patch phase's grows when its rows are chosen)
    int32_t computed = 0;  // rows done
    bool done() const { return computed >= total; }
};

}  // namespace lazyattn::engine
