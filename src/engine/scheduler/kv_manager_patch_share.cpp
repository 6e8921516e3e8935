// KvManager's patch shares: the choices of one request (RagRequest::choice_group, OpenAI's `n`)
// are the same prompt, so their recomputed document rows (DocumentReuse::recompute) are the same
// rows of the same KV. The first choice admitted computes them (measurement, selection and rows);
// a choice admitted while it holds them takes references to its patch blocks and waits, then
// copies the chosen rows in and runs its tail. n choices cost one recompute, not n.
#include "engine/scheduler/kv_manager.h"

#include <algorithm>

namespace lazyattn::engine {
namespace {

// The leader's measurement, selection and rows are all done.
bool patches_ready(const RequestKv& ar) { return !ar.probe_pending && !ar.deviation_pending() && ar.patches_done(); }

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

SequenceState* KvManager::patch_leader(const SequenceState& s) const {
    if (s.request.choice_group == 0) return nullptr;
    const auto it = patch_shares_.find(s.request.choice_group);
    if (it == patch_shares_.end() || it->second.leader == &s) return nullptr;
    const SequenceState& leader = *it->second.leader;
    // Siblings by construction; checked, since a group is only a number a caller chose.
    const RagRequest &a = s.request, &b = leader.request;
    if (a.tenant != b.tenant || a.segments != b.segments || a.tail != b.tail || !(a.reuse == b.reuse) ||
        a.first_segment_is_preamble != b.first_segment_is_preamble) {
        return nullptr;
    }
    return it->second.leader;
}

void KvManager::follow_patches(SequenceState& s, SequenceState& leader) {
    RequestKv& ar = s.kv;
    ar.num_patch_tokens = ar.num_patch_computed = 0;
    ar.num_deviation_rows = ar.num_deviation_computed = 0;
    ar.probe_pending = false;
    for (size_t d = 0; d < ar.segments.size(); ++d) {
        SegmentPlacement& place = ar.segments[d];
        place.patch_blocks = leader.kv.segments[d].patch_blocks;
        for (kv::BlockId b : place.patch_blocks) kv_.ref(b);
        ar.held.insert(ar.held.end(), place.patch_blocks.begin(), place.patch_blocks.end());
    }
    if (patches_ready(leader.kv)) {
        copy_rows(leader.kv, ar);
        return;
    }
    ar.awaiting_patches = true;
    patch_shares_.at(s.request.choice_group).waiting.push_back(&s);
}

void KvManager::share_ready_patches(SequenceState& s) {
    if (s.request.choice_group == 0 || !patches_ready(s.kv)) return;
    const auto it = patch_shares_.find(s.request.choice_group);
    if (it == patch_shares_.end() || it->second.leader != &s) return;
    for (SequenceState* f : it->second.waiting) copy_rows(s.kv, f->kv);
    it->second.waiting.clear();
}

void KvManager::leave_patch_share(SequenceState& s) {
    if (s.request.choice_group == 0) return;
    const auto it = patch_shares_.find(s.request.choice_group);
    if (it == patch_shares_.end()) return;
    PatchShare& share = it->second;
    if (share.leader != &s) {
        std::erase(share.waiting, &s);
        return;
    }
    if (share.waiting.empty()) {  // nobody waits: a later sibling leads anew (or reads nothing)
        patch_shares_.erase(it);
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
    const bool measuring = from.probe_pending || from.deviation_pending();
    for (size_t d = 0; d < to.segments.size(); ++d) {
        const SegmentPlacement& p = from.segments[d];
        SegmentPlacement& q = to.segments[d];
        q.patch_rows = p.patch_rows;
        q.patch_tokens = p.patch_tokens;
        q.sparse_patch = p.sparse_patch;
        q.selection_score = p.selection_score;
        if (measuring) std::fill(q.selection_score.begin(), q.selection_score.end(), 0.0f);
    }
    to.num_patch_tokens = from.num_patch_tokens;
    to.num_patch_computed = measuring ? 0 : from.num_patch_computed;
    to.probe_pending = from.probe_pending;
    to.num_probe_computed = measuring ? 0 : from.num_probe_computed;
    to.num_deviation_rows = from.num_deviation_rows;
    to.num_deviation_computed = measuring ? 0 : from.num_deviation_computed;
    // The rows still to compute are the heir's work now (chosen rows of a measurement are
    // counted when it ends).
    const int32_t remaining = to.num_patch_tokens - to.num_patch_computed;
    heir.stats.prefill_tokens += remaining;
    heir.stats.recomputed_tokens += remaining;
}

}  // namespace lazyattn::engine
