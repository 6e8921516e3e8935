// Scheduler: admitting a request: its KV placed by the KvManager (or "does not fit": it waits),
// then the admission's statistics.
#include <algorithm>

#include "core/timer.h"
#include "engine/scheduler/scheduler.h"

namespace lazyattn::engine {

bool Scheduler::try_admit(SequenceState& s) {
    if (s.request.reuse.neighbours > 0 && segments_are_blocks(config_.cache_mode)) {
        // The request's own documents are part of the corpus their neighbours come from.
        index_documents(s.request.tenant, s.request.documents());
    }
    if (!kv_.allocate(s, !running_.empty(), neighbours_)) return false;
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
