#include "engine/output/prefill_progress.h"

#include <algorithm>

#include "core/timer.h"

namespace lazyattn::engine {

int32_t prompt_tokens_in_place(const SequenceState& s, const KvManager& kv) {
    const int64_t total = s.request.num_prompt_tokens();
    // The tail's prompt rows not computed yet, and what the jobs of its missing segments still
    // have to compute (every other segment is in place: cached, or its job done).
    int64_t missing = std::max(0, s.kv.num_prompt_tail() - s.kv.num_tail_computed());
    const auto& jobs = kv.jobs();
    for (const int64_t id : s.segment_jobs) {
        if (id < 0) continue;
        const auto it = jobs.find(id);
        if (it != jobs.end())
            missing += std::max<int64_t>(0, int64_t(it->second.tokens.size()) - it->second.num_computed);
    }
    return int32_t(std::clamp<int64_t>(total - missing, 0, total));
}

void PrefillProgress::report(const Scheduler& scheduler) {
    size_t kept = 0;
    for (Watched w : watched_) {
        const SequenceState* s = scheduler.find(w.id);
        if (s == nullptr) continue;  // finished or cancelled: nothing more to say
        if (s->admitted) {
            const int32_t processed = prompt_tokens_in_place(*s, scheduler.kv());
            if (processed > w.reported) {
                EventTimings t;
                t.prompt_tokens = s->stats.num_prompt_tokens;
                t.cached = s->stats.reused_tokens;
                t.processed = std::max(processed, t.cached);
                // The first report describes the admission itself (nothing has run yet); once the
                // prompt is done, its time ends where its first token was sampled, as the tokens'
                // timings say.
                const double at = s->num_generated > 0 ? s->t_first_token : now_ms();
                t.prompt_ms = w.reported < 0 ? 0.0 : std::max(0.0, at - s->t_admit);
                s->handle->push_progress(t);
                w.reported = t.processed;
            }
            if (w.reported >= s->stats.num_prompt_tokens) continue;  // the whole prompt reported
        }
        watched_[kept++] = w;
    }
    watched_.resize(kept);
}

}  // namespace lazyattn::engine
