#include "engine/reuse/patch_shares.h"

#include <algorithm>

namespace lazyattn::engine {
namespace {

// What s reads of the leader's finished patches: which rows, in which form (the blocks are
// already s's references).
void copy_rows(const RequestKv& from, RequestKv& to) {
    for (size_t d = 0; d < to.segments.size(); ++d) {
        to.segments[d].patch_rows = from.segments[d].patch_rows;
        to.segments[d].patch_tokens = from.segments[d].patch_tokens;
        to.segments[d].sparse_patch = from.segments[d].sparse_patch;
    }
    to.awaiting_patches = false;
}

}  // namespace

SequenceState* PatchShares::leader_for(const SequenceState& s) const {
    if (s.request.choice_group == 0) return nullptr;
    const auto it = shares_.find(s.request.choice_group);
    if (it == shares_.end() || it->second.leader == &s) return nullptr;
    const SequenceState& leader = *it->second.leader;
    // Siblings by construction; checked, since a group is only a number a caller chose.
    const RagRequest &a = s.request, &b = leader.request;
    if (a.tenant != b.tenant || a.segments != b.segments || a.tail != b.tail || !(a.reuse == b.reuse) ||
        a.first_segment_is_preamble != b.first_segment_is_preamble) {
        return nullptr;
    }
    return it->second.leader;
}

void PatchShares::follow(SequenceState& s, SequenceState& leader) {
    RequestKv& ar = s.kv;
    ar.clear_recompute_phases();
    for (size_t d = 0; d < ar.segments.size(); ++d) {
        SegmentPlacement& place = ar.segments[d];
        place.patch_blocks = leader.kv.segments[d].patch_blocks;
        for (kv::BlockId b : place.patch_blocks) kv_.ref(b);
        ar.held.insert(ar.held.end(), place.patch_blocks.begin(), place.patch_blocks.end());
    }
    if (leader.kv.patches_ready()) {
        copy_rows(leader.kv, ar);
        return;
    }
    ar.awaiting_patches = true;
    shares_.at(s.request.choice_group).waiting.push_back(&s);
}

void PatchShares::share_ready(SequenceState& s) {
    if (s.request.choice_group == 0 || !s.kv.patches_ready()) return;
    const auto it = shares_.find(s.request.choice_group);
    if (it == shares_.end() || it->second.leader != &s) return;
    for (SequenceState* f : it->second.waiting) copy_rows(s.kv, f->kv);
    it->second.waiting.clear();
}

void PatchShares::leave(SequenceState& s) {
    if (s.request.choice_group == 0) return;
    const auto it = shares_.find(s.request.choice_group);
    if (it == shares_.end()) return;
    Share& share = it->second;
    if (share.leader != &s) {
        std::erase(share.waiting, &s);
        return;
    }
    if (share.waiting.empty()) {  // nobody waits: a later sibling leads anew (or reads nothing)
        shares_.erase(it);
        return;
    }
    // The first waiting follower already holds the patch blocks: it inherits the leader's
    // progress. Rows computed are in those blocks; a measurement in flight restarts (its partial
    // scores and probe rows were the leader's).
    SequenceState& heir = *share.waiting.front();
    share.waiting.erase(share.waiting.begin());
    share.leader = &heir;
    const RequestKv& from = s.kv;
    RequestKv& to = heir.kv;
    to.awaiting_patches = false;
    const PrefillPhase* patch = from.find_phase(PhaseKind::kPatch);
    const bool measuring = patch != nullptr && &from.current_phase() < patch;
    for (size_t d = 0; d < to.segments.size(); ++d) {
        const SegmentPlacement& p = from.segments[d];
        SegmentPlacement& q = to.segments[d];
        q.patch_rows = p.patch_rows;
        q.patch_tokens = p.patch_tokens;
        q.sparse_patch = p.sparse_patch;
        q.selection_score = p.selection_score;
        if (measuring) std::fill(q.selection_score.begin(), q.selection_score.end(), 0.0f);
    }
    // The leader's phases before the tail, with their progress (a measurement in flight from
    // its start); the heir's own tail phase stays.
    to.clear_recompute_phases();
    to.phases.insert(to.phases.begin(), from.phases.begin(), from.phases.end() - 1);
    if (measuring) {
        for (size_t i = 0; i + 1 < to.phases.size(); ++i) to.phases[i].computed = 0;
    }
    // The rows still to compute are the heir's work now (chosen rows of a measurement are
    // counted when it ends).
    const PrefillPhase* heir_patch = to.find_phase(PhaseKind::kPatch);
    const int32_t remaining = heir_patch != nullptr ? heir_patch->total - heir_patch->computed : 0;
    heir.stats.prefill_tokens += remaining;
    heir.stats.recomputed_tokens += remaining;
}

void PatchShares::lead(SequenceState& s) {
    if (s.request.choice_group != 0) shares_[s.request.choice_group].leader = &s;
}

}  // namespace lazyattn::engine
