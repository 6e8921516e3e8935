// RequestKv: the KV state of one admitted request: where each segment's KV lives and where it
// sits logically, the tail's blocks and tokens, and every block reference the request holds.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/request/rag_request.h"
#include "engine/sequence/prefill_phase.h"
#include "kv/block_pool.h"

namespace lazyattn::engine {

// One span the tail attends to (see kernels::AttentionSpan).
struct SegmentPlacement {
    std::vector<kv::BlockId> blocks;
    int32_t num_tokens = 0;
    int32_t logical_start = 0;
    // Where the keys were rotated when stored: 0 for a shared segment encoded alone, the
    // preamble's length for an anchored one, logical_start for a private copy.
    int32_t stored_base = 0;
    bool private_copy = false;  // block-attn: blocks are this request's re-rotated copy
    // DocumentReuse's recomputed tokens of the segment, ascending: token patch_rows[j] is
    // recomputed into slot j of patch_blocks (this request's). A prefix (the first tokens) is
    // read as a span of its own, keys at their logical positions; a sparse set (sparse_patch) as
    // private rows overriding the shared ones (kernels::KeyOverride), keys in the segment's
    // rotation frame (rotated at stored_base + token).
    std::vector<int32_t> patch_rows;
    std::vector<kv::BlockId> patch_blocks;
    int32_t patch_tokens = 0;
    bool sparse_patch = false;
    // Selection by a measurement: each token's score, the attention mass the tail's probe gave
    // it (summed over its rows, heads and layers: @query) or its KV deviation (@deviation);
    // patch_rows are chosen from it when the measurement ends. Empty: nothing to choose.
    std::vector<float> selection_score;
};

struct RequestKv {
    std::vector<SegmentPlacement> segments;
    std::vector<kv::BlockId> tail_blocks;
    // The prompt tail's rows after its cached whole blocks copied from a cached block that starts
    // with them (KvManager::match_tail): tail_copy_tokens rows of tail_copy_source (a reference,
    // also in `held`, kept until the prompt is computed: the copy has run by then) into the
    // request's own next tail block. -1: no copy.
    kv::BlockId tail_copy_source = -1;
    int32_t tail_copy_tokens = 0;
    std::vector<int32_t> tail_tokens;  // prompt tail, then generated tokens
    int32_t tail_start = 0;            // logical position of tail token 0
    // The prefill, in order (PrefillPhase); the tail phase is always last, its `computed` the
    // tail tokens whose K/V are in tail_blocks (prompt and generated).
    std::vector<PrefillPhase> phases{PrefillPhase{}};
    // A choice following a sibling's recompute (RagRequest::choice_group): its patch blocks are
    // the sibling's (references held), whose rows are being computed; nothing of it runs until
    // they are (KvManager::share_ready_patches copies the chosen rows in).
    bool awaiting_patches = false;
    std::vector<kv::BlockId> held;  // one entry per reference this request holds

    PrefillPhase& tail() { return phases.back(); }
    const PrefillPhase& tail() const { return phases.back(); }
    int32_t num_tail_computed() const { return tail().computed; }
    int32_t num_prompt_tail() const { return tail().total; }
    int32_t next_position() const { return tail_start + int32_t(tail_tokens.size()); }
    // The first phase not done (the tail once the prompt is).
    const PrefillPhase& current_phase() const {
        for (const PrefillPhase& p : phases) {
            if (!p.done()) return p;
        }
        return tail();
    }
    PrefillPhase* find_phase(PhaseKind kind) {
        for (PrefillPhase& p : phases) {
            if (p.kind == kind) return &p;
        }
        return nullptr;
    }
    const PrefillPhase* find_phase(PhaseKind kind) const {
        for (const PrefillPhase& p : phases) {
            if (p.kind == kind) return &p;
        }
        return nullptr;
    }
    // Rows the patch phase recomputes (0 without one).
    int32_t num_patch_tokens() const {
        const PrefillPhase* p = find_phase(PhaseKind::kPatch);
        return p != nullptr ? p->total : 0;
    }
    // Every phase before the tail is done: the recomputed rows are measured, chosen and run.
    bool patches_ready() const {
        for (size_t i = 0; i + 1 < phases.size(); ++i) {
            if (!phases[i].done()) return false;
        }
        return true;
    }
    // Drops every phase before the tail (the tail's progress kept).
    void clear_recompute_phases() { phases.erase(phases.begin(), phases.end() - 1); }
};

}  // namespace lazyattn::engine
