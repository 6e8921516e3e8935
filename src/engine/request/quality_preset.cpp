#include "engine/request/quality_preset.h"

namespace lazyattn::engine {

std::optional<QualityPreset> parse_quality_preset(std::string_view name) {
    if (name == "fast") return QualityPreset::kFast;
    if (name == "balanced") return QualityPreset::kBalanced;
    if (name == "accurate") return QualityPreset::kAccurate;
    return std::nullopt;
}

std::string_view quality_preset_name(QualityPreset p) {
    switch (p) {
        case QualityPreset::kFast:
            return "fast";
        case QualityPreset::kBalanced:
            return "balanced";
        case QualityPreset::kAccurate:
            return "accurate";
    }
    return "fast";
}

DocumentReuse preset_document_reuse(QualityPreset p) {
    DocumentReuse r;
    if (p == QualityPreset::kFast) return r;
    r.neighbours = 1;
    r.neighbours_when_ready = true;
    if (p == QualityPreset::kAccurate) {
        // The knee of docs/benchmarks.md §4's frontier: the first 10% recovers 62% of the gap to
        // full attention at 1.62x lazy's TTFT; 15% adds 3 points for 1.96x. No damping beside it:
        // the recomputed first tokens have read their context and are no sinks any more (and a
        // share's private rows split the spans damping biases, DocumentReuse::check).
        r.recompute_share = 0.10;
        return r;
    }
    // The damped sinks (design.md §10): free, and on the 500 +5.0 points alone, +6.4 with the
    // conditioned copies (the copies help retrieval, the damping aggregation and 2Wiki).
    r.damp_tokens = 16;
    r.damp_bias = -2.0f;
    return r;
}

int32_t preset_condition_after(QualityPreset p) { return p == QualityPreset::kFast ? 0 : kDefaultConditionAfter; }

std::string quality_preset_help() {
    return "fast: plain lazy, 22.4% on the 500 questions (full attention 32.8%), TTFT 1x; "
           "balanced (default): damped sinks (damp=16:-2) and neighbour-conditioned copies where they exist "
           "(neighbours=1@ready), made in the background for documents seen in 2 requests: 28.8% on the 500 "
           "(+6.4 points, p = 0.0008) and ahead on the held-out families pooled, significantly worse on no "
           "family; in steady state (copies made) TTFT p50 0.73-1.20x fast's and throughput 0.98-1.02x; "
           "accurate: balanced's copies and each document's first 10% recomputed instead of the damping: 27.7% "
           "against fast's 23.4% on 466 of the 500 (+4.3, p = 0.038), no better than balanced on this model, "
           "TTFT 1.62x in RAM. Figures: SmolLM2-135M, "
           "docs/benchmarks.md section 4. A request's document_reuse still wins";
}

}  // namespace lazyattn::engine
