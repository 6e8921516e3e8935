// The phase table: one row per kind of prefill phase (sequence/prefill_phase.h), holding what is
// the kind's own and nothing else: its name, the rows one budget token pays for, the capability
// it needs of the model, how its rows are laid out in a step and what their result does to the
// request. The scheduler, the KV manager and the runner read the rows and never branch on a
// kind, so a new measured selection of recomputed rows (DocumentReuse::recompute_select) is a row
// of phase_kinds.cpp, its selection's name (request/document_reuse) and, when it measures with an
// op of its own, that op in model/ and backend/.
//
// Which phases a request runs is decided once, at admission, from the request and its placement
// alone: plan_phases (the KV manager then reserves the blocks the plan asks for).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/status.h"
#include "engine/request/document_reuse.h"
#include "engine/sequence/prefill_phase.h"
#include "model/forward_batch.h"

namespace lazyattn::backend {
class KvMemory;
}
namespace lazyattn::model {
class Model;
}

namespace lazyattn::engine {

struct RagRequest;
struct RequestKv;
struct SequenceState;

// Selection by the question measures attention from the prompt tail's last rows only (the
// question ends the tail; the mass costs rows x keys per probed layer on the host).
constexpr int32_t kProbeMeasuredRows = 256;

// Where one chunk's measurement is in what its step measured: the forward's key mass, or (a kind
// whose rows run apart) what its own measurement returned.
struct ChunkLayout {
    int64_t offset = -1;  // -1: none of its rows is measured
    int64_t count = 0;
};

// What a kind's layout hook lays its rows out with: the step's batches and the layout rules all
// kinds share (runner/input_builder.cpp implements it; every rule of the step's layout is there
// or in a kind's hook).
class PhaseLayout {
public:
    // The step's forward batch.
    virtual model::ForwardBatch& forward() = 0;
    // The batch of `kind`'s rows that run apart from the forward (PhaseKindRow::measure).
    virtual model::ForwardBatch& apart(PhaseKind kind) = 0;
    // The spans of s's segments as its prefill rows read them: shared blocks, its recomputed rows
    // as a leading span or as overrides.
    virtual void segment_spans(model::ForwardBatch& batch, const SequenceState& s) = 0;
    // Tail rows [begin, end) of s as one sequence of the forward over its segments and the tail's
    // own blocks, no logits; returns its first row.
    virtual int32_t tail_sequence(const SequenceState& s, int32_t begin, int32_t end) = 0;
    virtual int32_t block_size() const = 0;

    // One row: `token` at `position`, its K/V written at `slot`, its key rotated at `stored`.
    static void row(model::ForwardBatch& b, int32_t token, int32_t position, int32_t stored, int32_t slot) {
        b.token_ids.push_back(token);
        b.positions.push_back(position);
        b.store_positions.push_back(stored);
        b.slot_mapping.push_back(slot);
    }

protected:
    ~PhaseLayout() = default;
};

// What a request runs before its tail, from its request and placement alone (no blocks).
struct PhasePlan {
    struct Segment {
        std::vector<int32_t> patch_rows;  // its recomputed tokens; empty while a measurement chooses them
        int32_t room = 0;                 // tokens its patch blocks hold: the most it may recompute
        bool measured = false;            // a measurement scores its tokens (selection_score)
    };
    std::vector<Segment> segments;     // one per placed segment
    bool sparse = false;               // recomputed rows read as overrides (SegmentPlacement::sparse_patch)
    std::vector<PrefillPhase> phases;  // before the tail, in the order they run; empty: nothing recomputed
};

// One kind of phase. The tail's layout and result are the runner's and the scheduler's own
// (logits, sampling, the prompt's end published); every other kind's are its hooks.
struct PhaseKindRow {
    const char* name = "";
    // Rows of the phase one token of a step's budget pays for (a KV-deviation row runs one layer
    // and a third of the next, so 8 of them count as one row).
    int32_t rows_per_budget_token = 1;
    // Its rows run apart from the step's forward (`measure` runs them): they are not the step's
    // rows nor prompt tokens computed.
    bool apart = false;
    // Its rows compute the prompt tail into the tail's own blocks: no cached tail is matched.
    bool writes_tail = false;

    // --- A measurement (a phase before the patch phase that chooses its rows): the selections
    // it serves; null for the tail and the patch phase.
    bool (*serves)(RecomputeSelect select) = nullptr;
    // Its rows for a request planned as `plan` (its measured segments marked).
    int32_t (*rows)(const RequestKv& placement, const PhasePlan& plan) = nullptr;
    // The capability it needs of the model and its backend, and the refusal of a request that
    // selects by it where they lack it (null: it runs everywhere).
    bool (*supported)(const model::Model& model) = nullptr;
    const char* refusal = "";

    // Lays out rows [begin, end) of s's phase of this kind and says where its measurement will be.
    void (*layout)(PhaseLayout& at, PhaseKind kind, const SequenceState& s, int32_t begin, int32_t end,
                   ChunkLayout& where) = nullptr;
    // Runs the step's rows of this kind laid out apart, one measurement per row (apart kinds only).
    Status (*measure)(model::Model& model, const model::ForwardBatch& rows, backend::KvMemory& kv,
                      std::vector<float>* measured) = nullptr;
    // Applies what rows [begin, end) measured (ChunkResult::measured) to s: its documents'
    // selection scores and its statistics. The scheduler then advances the phase and, once a
    // measurement is done, chooses its rows (choose_measured_rows).
    void (*record)(SequenceState& s, int32_t begin, int32_t end, const std::vector<float>& measured) = nullptr;

    bool measures() const { return serves != nullptr; }
};

const PhaseKindRow& phase_kind(PhaseKind kind);
int32_t num_phase_kinds();
// The measurement that serves `select`, or none (its rows are known without measuring).
std::optional<PhaseKind> measurement_for(RecomputeSelect select);
// Whether a request selecting by `select` computes its prompt tail's rows in a measurement (so
// it matches no cached tail).
bool measurement_writes_tail(RecomputeSelect select);
// The measurements `model` and its backend can run, as ModelFacts::measurements' bits.
uint32_t supported_measurements(const model::Model& model);

// The phases r runs before its tail, placed as `placement` (its segments and its tail phase) in
// blocks of block_size tokens: its measurement (if its selection has one and some document a
// budget), then its patch phase (recomputed rows, or room for what the measurement chooses).
PhasePlan plan_phases(const RagRequest& r, const RequestKv& placement, int32_t block_size);

}  // namespace lazyattn::engine
