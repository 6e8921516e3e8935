// Scheduler: admitting a request: whether it could ever fit (checked when it arrives and while
// it waits), its KV placed by the KvManager (or "does not fit": it waits), then the admission's
// statistics.
#include <algorithm>

#include "core/timer.h"
#include "engine/scheduler/block_budget.h"
#include "engine/scheduler/scheduler.h"

namespace lazyattn::engine {

Status Scheduler::check_fits(const RagRequest& r, const ChainSeeds& seeds) const {
    const int32_t bs = kv_.block_size();
    int64_t need = block_budget::worst_case(r, config_.cache_mode, bs, context_length());
    const PinLedger& pins = documents_.pins();
    const int32_t total = kv_.num_blocks(), pinned = pins.num_pinned();
    if (pinned > 0 && segments_are_blocks(config_.cache_mode)) {
        // The tenant's pinned documents are in the pool already (within the pinned blocks).
        for (size_t d = 0; d < r.segments.size(); ++d) {
            const auto& seg = r.segments[d];
            if (seg.empty() || std::find(r.segments.begin(), r.segments.begin() + d, seg) != r.segments.begin() + d) {
                continue;
            }
            need -= pins.document_blocks(kv::hash_chain(seeds.segment, seg, bs).back());
        }
    }
    if (need <= total - pinned) return {};
    return resource_exhausted("request needs up to " + std::to_string(need) + " KV blocks but the whole pool has " +
                              std::to_string(total) + ", of which " + std::to_string(pinned) +
                              " are pinned by documents, leaving " + std::to_string(total - pinned) +
                              " (raise --kv-cache-mb, unpin documents or shorten the request)");
}

bool Scheduler::try_admit(SequenceState& s) {
    if (s.request.reuse.neighbours > 0 && segments_are_blocks(config_.cache_mode)) {
        // The request's own documents are part of the corpus their neighbours come from.
        index_documents(s.request.tenant, s.request.documents());
    }
    adopt_conditioning(s);
    if (!kv_.allocate(s, !running_.empty(), neighbours_)) return false;
    pin_conditioning(s);
    const RequestKv& ar = s.kv;
    s.admitted = true;
    s.admit_order = next_admit_order_++;
    const bool first_admission = s.admit_step < 0;
    if (s.admit_step < 0) {
        s.admit_step = step_count_;
        s.t_admit = now_ms();
    }
    documents_.note(s);
    RequestStats& st = s.stats;
    // What the request found cached is decided when it first arrives: after a preemption it is
    // re-admitted against blocks it computed itself, so counting those again would report more
    // cached tokens than the prompt has and inflate the hit ratio. Work (prefill) always adds up.
    if (first_admission) {
        st.segments_hit = s.admission.hits;
        st.segments_missed = s.admission.misses;
        st.segments_from_store = s.admission.from_store;
        st.reused_tokens = s.admission.reused + ar.num_tail_computed();
        st.conditioned_lookups = s.admission.conditioned_lookups;
        st.segments_conditioned = s.admission.conditioned;
        stats_.conditioned_lookups += s.admission.conditioned_lookups;
        stats_.conditioned_served += s.admission.conditioned;
        note_background(s);
    }
    st.prefill_tokens += s.admission.computed + ar.num_prompt_tail() - ar.num_tail_computed() + ar.num_patch_tokens();
    st.recomputed_tokens += ar.num_patch_tokens();
    st.peak_blocks = std::max(st.peak_blocks, kv_.kv_cache().num_used());
    stats_.prompt_tokens_reused += s.admission.reused + ar.num_tail_computed();
    stats_.segment_hits += s.admission.hits;
    stats_.segment_misses += s.admission.misses;
    stats_.segment_store_hits += s.admission.from_store;
    return true;
}

}  // namespace lazyattn::engine
