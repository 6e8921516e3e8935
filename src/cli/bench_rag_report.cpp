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

std::vector<RunWindow> run_windows(const bench::RunResult& r, int32_t num_windows) {
    const size_t n = r.submitted_s.size();
    if (n == 0 || num_windows <= 0 || r.completed_s.size() != n) return {};
    const double start = *std::min_element(r.submitted_s.begin(), r.submitted_s.end());
    const double end = std::max(*std::max_element(r.completed_s.begin(), r.completed_s.end()), start + 1e-9);
    const double span = (end - start) / num_windows;
    std::vector<RunWindow> out(static_cast<size_t>(num_windows));
    std::vector<std::vector<double>> ttft(out.size()), tpot(out.size());
    auto window_of = [&](double t) { return std::min(out.size() - 1, size_t(std::max(0.0, (t - start) / span))); };
    for (size_t i = 0; i < n; ++i) {
        const size_t w = window_of(r.submitted_s[i]);
        out[w].requests += 1;
        if (i < r.conditioned_lookups.size()) {
            out[w].lookups += r.conditioned_lookups[i];
            out[w].served += r.conditioned_served[i];
        }
        if (i < r.ttft_ms.size()) ttft[w].push_back(r.ttft_ms[i]);
        if (i < r.tpot_ms.size() && r.tpot_ms[i] > 0) tpot[w].push_back(r.tpot_ms[i]);
        out[window_of(r.completed_s[i])].completed_per_s += 1.0 / span;
    }
    for (size_t w = 0; w < out.size(); ++w) {
        out[w].start_s = start + double(w) * span;
        out[w].end_s = start + double(w + 1) * span;
        out[w].ttft_p50_ms = bench::percentile(ttft[w], 50);
        out[w].ttft_p99_ms = bench::percentile(ttft[w], 99);
        out[w].tpot_p50_ms = bench::percentile(tpot[w], 50);
    }
    // Rows computed before the measured stream began (the warm-up's) fall in no span.
    int64_t rows_before = 0;
    for (const auto& [t, rows] : r.background_rows_at) {
        if (t >= start) out[window_of(t)].background_rows += rows - rows_before;
        rows_before = rows;
    }
    return out;
}

nlohmann::json windows_json(const std::vector<RunWindow>& windows) {
    nlohmann::json out = nlohmann::json::array();
    for (const RunWindow& w : windows) {
        out.push_back({{"start_s", w.start_s},
                       {"end_s", w.end_s},
                       {"requests", w.requests},
                       {"conditioned_lookups", w.lookups},
                       {"conditioned_served", w.served},
                       {"conditioned_share", w.conditioned_share()},
                       {"ttft_p50_ms", w.ttft_p50_ms},
                       {"ttft_p99_ms", w.ttft_p99_ms},
                       {"tpot_p50_ms", w.tpot_p50_ms},
                       {"completed_per_s", w.completed_per_s},
                       {"background_rows", w.background_rows}});
    }
    return out;
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
