#include "cli/bench_rag_report.h"

#include <algorithm>

#include "cli/store_json.h"
#include "engine/engine_config.h"

namespace lazyattn::cli {

Expected<bench::KvBudget> rag_kv_budget(const BenchRagOptions& o, const model::ModelConfig& model, double docs) {
    const kv::KvShape shape = engine::kv_shape_for(model, engine::EngineConfig{}.block_size, 0, o.common.kv_types);
    if (docs > 0) return bench::kv_budget_for_docs(shape, docs, o.workload.doc_tokens);
    if (o.kv_budget_docs > 0) return bench::kv_budget_for_docs(shape, o.kv_budget_docs, o.workload.doc_tokens);
    return bench::kv_budget_for_mib(shape, o.kv_cache_mb, o.workload.doc_tokens);
}

int32_t sweep_warmup(const BenchRagOptions& o) {
    const int32_t asked = o.sweep_warmup_requests >= 0 ? o.sweep_warmup_requests : o.warmup_requests;
    return std::clamp(asked, 0, o.sweep_requests / 2);
}

namespace {

nlohmann::json step_kind_json(const engine::SchedulerStats::StepKind& k) {
    return {{"steps", k.steps},
            {"decode_rows", k.decode_rows},
            {"prefill_rows", k.prefill_rows},
            {"forward_ms", k.forward_ms}};
}

}  // namespace

std::vector<double> conditioned_share_by_fifth(const bench::RunResult& r) {
    std::vector<double> out;
    const size_t n = r.conditioned_lookups.size();
    for (size_t part = 0; part < 5 && n > 0; ++part) {
        int64_t lookups = 0, served = 0;
        for (size_t i = part * n / 5; i < (part + 1) * n / 5; ++i) {
            lookups += r.conditioned_lookups[i];
            served += r.conditioned_served[i];
        }
        out.push_back(lookups > 0 ? double(served) / double(lookups) : 0.0);
    }
    return out;
}

nlohmann::json conditioned_json(const bench::RunResult& r) {
    int64_t lookups = 0, served = 0;
    for (size_t i = 0; i < r.conditioned_lookups.size(); ++i) {
        lookups += r.conditioned_lookups[i];
        served += r.conditioned_served[i];
    }
    return {{"lookups", lookups},
            {"served", served},
            {"share_by_fifth", conditioned_share_by_fifth(r)},
            {"background_done", r.background.done},
            {"background_cancelled", r.background.cancelled},
            {"background_refused", r.background.refused},
            {"background_queued_at_end", r.background.queued + r.background.running},
            {"background_rows", r.background_rows},
            {"requests_per_s_last_fifth", r.requests_per_s_last_fifth()}};
}

nlohmann::json run_summary_json(const bench::RunResult& r) {
    using bench::percentile;
    const bench::Interval p50 = bench::bootstrap_percentile_ci(r.ttft_ms, 50);
    const bench::Interval p99 = bench::bootstrap_percentile_ci(r.ttft_ms, 99);
    return {{"label", r.label},
            {"mode", r.mode},
            {"warmup_requests", r.warmup_requests},
            {"measured_requests", r.ttft_ms.size()},
            {"ttft_mean_ms", bench::mean(r.ttft_ms)},
            {"ttft_p50_ms", percentile(r.ttft_ms, 50)},
            {"ttft_p50_ci95_ms", {p50.low, p50.high}},
            {"ttft_p90_ms", percentile(r.ttft_ms, 90)},
            {"ttft_p99_ms", percentile(r.ttft_ms, 99)},
            {"ttft_p99_ci95_ms", {p99.low, p99.high}},
            {"tpot_mean_ms", bench::mean(r.tpot_ms)},
            {"e2e_p50_ms", percentile(r.e2e_ms, 50)},
            {"wall_s", r.wall_s},
            {"measured_s", r.measured_s},
            {"requests_per_s", r.requests_per_s()},
            {"output_tok_per_s", r.output_tok_per_s()},
            {"prefill_tokens", r.prefill_tokens},
            {"reused_tokens", r.reused_tokens},
            {"hit_ratio", r.hit_ratio()},
            {"store_hits", r.segment_store_hits},
            {"store", store_stats_json(r.store)},
            {"document_lookups", r.compulsory.lookups},
            {"compulsory_misses", r.compulsory.compulsory},
            {"compulsory_fraction", r.compulsory.fraction()},
            {"peak_blocks", r.peak_blocks},
            {"pool_blocks", r.pool_blocks},
            {"preemptions", r.preemptions},
            {"conditioned", conditioned_json(r)},
            {"steps",
             {{"decode_only", step_kind_json(r.decode_only)},
              {"prefill_only", step_kind_json(r.prefill_only)},
              {"mixed", step_kind_json(r.mixed)}}}};
}

}  // namespace lazyattn::cli
