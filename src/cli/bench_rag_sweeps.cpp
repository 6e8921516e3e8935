// `lazyattn bench rag` sweeps, each on one seeded stream per point and every --sweep-modes mode:
// TTFT p50/p99 and throughput against the KV budget, against document skew and against Poisson
// arrival rate; and the capacity experiment (the LazyAttention paper's Table 1): hit ratio and
// TTFT as the KV pool shrinks, for position-agnostic caching (one copy per document) against
// position-aware caching (one copy per document and slot), next to the analytic curves H(C) and
// H(floor(C / k)). A mode that cannot fit one request into a point's budget (block-attn needs
// room for its per-request copies) is reported as refused there, not run on a bigger pool.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "bench/rag_runner.h"
#include "cli/bench_rag_report.h"
#include "cli/commands.h"
#include "engine/loading/loaded_model.h"

namespace lazyattn::cli {
namespace {

Expected<bench::RunResult> run_quiet(const bench::Workload& w, engine::LoadedModel& lm, const std::string& label,
                                     const engine::EngineConfig& ec, int32_t clients, int32_t warmup) {
    bench::RunConfig rc;
    rc.label = label;
    rc.engine = ec;
    rc.clients = clients;
    rc.warmup_requests = warmup;
    return bench::run_workload(w, *lm.model, *lm.tokenizer, rc, [&](int32_t d, int32_t t) {
        std::fprintf(stderr, "\r  %-34s %d/%d%s", label.c_str(), d, t, d == t ? "\n" : "");
    });
}

// One sweep point in one mode: its summary, or {"refused": why} when the budget cannot hold a
// single request of the mode.
Expected<nlohmann::json> sweep_point(const bench::Workload& w, engine::LoadedModel& lm, const std::string& label,
                                     const engine::EngineConfig& ec, int32_t clients, int32_t warmup) {
    auto r = run_quiet(w, lm, label, ec, clients, warmup);
    if (!r.ok() && r.status().code() == StatusCode::kResourceExhausted) {
        std::fprintf(stderr, "\n");
        return nlohmann::json{{"mode", engine::cache_mode_name(ec.cache_mode)}, {"refused", r.status().message()}};
    }
    if (!r.ok()) return r.status();
    return run_summary_json(*r);
}

void print_point(const char* x_format, double x, const nlohmann::json& j) {
    std::printf(x_format, x);
    if (j.contains("refused")) {
        std::printf(" %-11s refused: one request does not fit the budget\n", j["mode"].get<std::string>().c_str());
        return;
    }
    std::printf(" %-11s %9.1f %15s %9.1f %8.3f %5.0f%% %5.0f%%\n", j["mode"].get<std::string>().c_str(),
                j["ttft_p50_ms"].get<double>(),
                ("[" + std::to_string(int(j["ttft_p50_ci95_ms"][0].get<double>())) + ", " +
                 std::to_string(int(j["ttft_p50_ci95_ms"][1].get<double>())) + "]")
                    .c_str(),
                j["ttft_p99_ms"].get<double>(), j["requests_per_s"].get<double>(), 100 * j["hit_ratio"].get<double>(),
                100 * j["compulsory_fraction"].get<double>());
}

const char* kPointHeader = " %-11s %9s %15s %9s %8s %6s %6s\n";

void print_header(const char* x_name) {
    std::printf("%8s", x_name);
    std::printf(kPointHeader, "mode", "TTFT p50", "p50 95% CI", "p99", "req/s", "hit%", "compl%");
}

Status budget_sweep(const BenchRagOptions& o, engine::LoadedModel& lm, const engine::EngineConfig& base,
                    nlohmann::json& out) {
    if (o.budget_sweep_docs.empty()) return {};
    bench::WorkloadConfig wc = o.workload;
    wc.zipf_s = o.zipf.front();
    wc.num_requests = o.sweep_requests;
    LA_ASSIGN_OR_RETURN(auto w, bench::make_workload(wc, *lm.tokenizer));
    std::printf("\nTTFT and throughput vs KV budget (%d requests, first %d warm-up, %d clients; budget in documents)\n",
                o.sweep_requests, sweep_warmup(o), o.clients);
    print_header("docs");
    for (double docs : o.budget_sweep_docs) {
        LA_ASSIGN_OR_RETURN(auto budget, rag_kv_budget(o, lm.model->config(), docs));
        for (const auto& mode : o.sweep_modes) {
            engine::EngineConfig ec = base;
            ec.cache_mode = *engine::parse_cache_mode(mode);
            ec.kv_num_blocks = budget.num_blocks;
            char label[64];
            std::snprintf(label, sizeof label, "budget %.1f docs %s", docs, mode.c_str());
            LA_ASSIGN_OR_RETURN(auto j, sweep_point(w, lm, label, ec, o.clients, sweep_warmup(o)));
            print_point("%8.1f", docs, j);
            j["kv_budget_docs"] = budget.docs();
            j["kv_budget_mib"] = budget.mib();
            j["kv_budget_blocks"] = budget.num_blocks;
            out["budget_sweep"].push_back(j);
        }
    }
    return {};
}

Status skew_sweep(const BenchRagOptions& o, engine::LoadedModel& lm, const engine::EngineConfig& base,
                  nlohmann::json& out) {
    if (o.skew_sweep.empty()) return {};
    std::printf("\nTTFT and throughput vs document skew (%d requests, first %d warm-up, %d clients)\n",
                o.sweep_requests, sweep_warmup(o), o.clients);
    print_header("zipf s");
    for (double s : o.skew_sweep) {
        bench::WorkloadConfig wc = o.workload;
        wc.zipf_s = s;
        wc.num_requests = o.sweep_requests;
        LA_ASSIGN_OR_RETURN(auto w, bench::make_workload(wc, *lm.tokenizer));
        for (const auto& mode : o.sweep_modes) {
            engine::EngineConfig ec = base;
            ec.cache_mode = *engine::parse_cache_mode(mode);
            char label[64];
            std::snprintf(label, sizeof label, "s=%.2f %s", s, mode.c_str());
            LA_ASSIGN_OR_RETURN(auto j, sweep_point(w, lm, label, ec, o.clients, sweep_warmup(o)));
            print_point("%8.2f", s, j);
            j["zipf_s"] = s;
            out["skew_sweep"].push_back(j);
        }
    }
    return {};
}

Status rate_sweep(const BenchRagOptions& o, engine::LoadedModel& lm, const engine::EngineConfig& base,
                  nlohmann::json& out) {
    if (o.rates.empty()) return {};
    std::printf("\nTTFT and throughput vs Poisson arrival rate (open loop, %d requests, first %d warm-up)\n",
                o.sweep_requests, sweep_warmup(o));
    print_header("req/s");
    for (double rate : o.rates) {
        bench::WorkloadConfig wc = o.workload;
        wc.zipf_s = o.zipf.front();
        wc.num_requests = o.sweep_requests;
        wc.arrival_rate = rate;
        LA_ASSIGN_OR_RETURN(auto w, bench::make_workload(wc, *lm.tokenizer));
        for (const auto& mode : o.sweep_modes) {
            engine::EngineConfig ec = base;
            ec.cache_mode = *engine::parse_cache_mode(mode);
            char label[64];
            std::snprintf(label, sizeof label, "rate %.2f %s", rate, mode.c_str());
            LA_ASSIGN_OR_RETURN(auto j, sweep_point(w, lm, label, ec, 0, sweep_warmup(o)));
            print_point("%8.2f", rate, j);
            j["rate"] = rate;
            out["rate_sweep"].push_back(j);
        }
    }
    return {};
}

Status capacity_sweep(const BenchRagOptions& o, engine::LoadedModel& lm, const engine::EngineConfig& base,
                      nlohmann::json& out) {
    if (o.capacity_docs.empty()) return {};
    bench::WorkloadConfig wc = o.workload;
    wc.zipf_s = o.zipf.front();
    wc.num_requests = o.sweep_requests;
    LA_ASSIGN_OR_RETURN(auto w, bench::make_workload(wc, *lm.tokenizer));
    const int32_t bs = base.block_size;
    const int32_t per_doc = (wc.doc_tokens + bs - 1) / bs;
    const int32_t per_tail = (wc.tail_tokens + wc.output_tokens + bs - 1) / bs + 1;
    std::printf(
        "\ncapacity: hit ratio and TTFT as the pool shrinks (one client; pool = C documents + one request's "
        "working set)\n%6s %-16s %8s %10s %10s\n",
        "C", "caching", "hit%", "analytic%", "TTFT p50");
    for (int32_t c : o.capacity_docs) {
        for (bool aware : {false, true}) {
            engine::EngineConfig ec = base;
            ec.cache_mode = engine::CacheMode::kLazy;
            ec.position_aware_segments = aware;
            ec.kv_num_blocks = (c + wc.docs_per_request) * per_doc + per_tail;
            const std::string label =
                std::string(aware ? "position-aware" : "position-agnostic") + " C=" + std::to_string(c);
            LA_ASSIGN_OR_RETURN(auto r, run_quiet(w, lm, label, ec, 1, 0));
            const double analytic = bench::analytic_hit_ratio(w.popularity, aware ? c / wc.docs_per_request : c);
            std::printf("%6d %-16s %7.0f%% %9.0f%% %10.1f\n", c, aware ? "position-aware" : "position-agnostic",
                        100 * r.hit_ratio(), 100 * analytic, bench::percentile(r.ttft_ms, 50));
            out["capacity_sweep"].push_back(nlohmann::json{{"capacity_docs", c},
                                                           {"position_aware", aware},
                                                           {"hit_ratio", r.hit_ratio()},
                                                           {"analytic_hit_ratio", analytic},
                                                           {"pool_blocks", ec.kv_num_blocks},
                                                           {"ttft_p50_ms", bench::percentile(r.ttft_ms, 50)}});
        }
    }
    return {};
}

}  // namespace

Status run_bench_rag_sweeps(const BenchRagOptions& o, engine::LoadedModel& lm, const engine::EngineConfig& base,
                            nlohmann::json& out) {
    LA_RETURN_IF_ERROR(budget_sweep(o, lm, base, out));
    LA_RETURN_IF_ERROR(skew_sweep(o, lm, base, out));
    LA_RETURN_IF_ERROR(rate_sweep(o, lm, base, out));
    return capacity_sweep(o, lm, base, out);
}

}  // namespace lazyattn::cli
