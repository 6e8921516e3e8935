// `lazyattn bench rag` sweeps: throughput vs document skew, TTFT vs Poisson arrival rate, and the
// capacity experiment (the LazyAttention paper's Table 1): hit ratio and TTFT as the KV pool
// shrinks, for position-agnostic caching (one copy per document) against position-aware caching
// (one copy per document and slot), next to the analytic curves H(C) and H(floor(C / k)).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "bench/rag_runner.h"
#include "cli/commands.h"
#include "engine/loaded_model.h"

namespace lazyattn::cli {
namespace {

const std::vector<std::string> kSweepModes = {"lazy", "block-attn", "prefix"};

Expected<bench::RunResult> run_quiet(const bench::Workload& w, engine::LoadedModel& lm, const std::string& label,
                                     const engine::EngineConfig& ec, int32_t clients) {
    bench::RunConfig rc;
    rc.label = label;
    rc.engine = ec;
    rc.clients = clients;
    return bench::run_workload(w, *lm.model, *lm.tokenizer, rc, [&](int32_t d, int32_t t) {
        std::fprintf(stderr, "\r  %-34s %d/%d%s", label.c_str(), d, t, d == t ? "\n" : "");
    });
}

Status skew_sweep(const BenchRagOptions& o, engine::LoadedModel& lm, const engine::EngineConfig& base,
                  nlohmann::json& out) {
    if (o.skew_sweep.empty()) return {};
    std::printf("\nthroughput vs skew (%d requests, %d clients)\n%8s %-11s %8s %10s %6s\n", o.sweep_requests, o.clients,
                "zipf s", "mode", "req/s", "TTFT p50", "hit%");
    for (double s : o.skew_sweep) {
        bench::WorkloadConfig wc = o.workload;
        wc.zipf_s = s;
        wc.num_requests = o.sweep_requests;
        LA_ASSIGN_OR_RETURN(auto w, bench::make_workload(wc, *lm.tokenizer));
        for (const auto& mode : kSweepModes) {
            engine::EngineConfig ec = base;
            ec.cache_mode = *engine::parse_cache_mode(mode);
            LA_ASSIGN_OR_RETURN(auto r,
                                run_quiet(w, lm, "s=" + std::to_string(s).substr(0, 4) + " " + mode, ec, o.clients));
            std::printf("%8.2f %-11s %8.3f %10.1f %5.0f%%\n", s, mode.c_str(), r.requests_per_s(),
                        bench::percentile(r.ttft_ms, 50), 100 * r.hit_ratio());
            out["skew_sweep"].push_back(nlohmann::json{{"zipf_s", s},
                                                       {"mode", mode},
                                                       {"requests_per_s", r.requests_per_s()},
                                                       {"output_tok_per_s", r.output_tok_per_s()},
                                                       {"ttft_p50_ms", bench::percentile(r.ttft_ms, 50)},
                                                       {"hit_ratio", r.hit_ratio()}});
        }
    }
    return {};
}

Status rate_sweep(const BenchRagOptions& o, engine::LoadedModel& lm, const engine::EngineConfig& base,
                  nlohmann::json& out) {
    if (o.rates.empty()) return {};
    std::printf("\nTTFT vs Poisson arrival rate (%d requests)\n%8s %-11s %10s %10s %8s\n", o.sweep_requests, "req/s",
                "mode", "TTFT p50", "TTFT p99", "served");
    for (double rate : o.rates) {
        bench::WorkloadConfig wc = o.workload;
        wc.zipf_s = o.zipf.front();
        wc.num_requests = o.sweep_requests;
        wc.arrival_rate = rate;
        LA_ASSIGN_OR_RETURN(auto w, bench::make_workload(wc, *lm.tokenizer));
        for (const auto& mode : kSweepModes) {
            engine::EngineConfig ec = base;
            ec.cache_mode = *engine::parse_cache_mode(mode);
            LA_ASSIGN_OR_RETURN(auto r,
                                run_quiet(w, lm, "rate " + std::to_string(rate).substr(0, 5) + " " + mode, ec, 0));
            std::printf("%8.2f %-11s %10.1f %10.1f %8.3f\n", rate, mode.c_str(), bench::percentile(r.ttft_ms, 50),
                        bench::percentile(r.ttft_ms, 99), r.requests_per_s());
            out["rate_sweep"].push_back(nlohmann::json{{"rate", rate},
                                                       {"mode", mode},
                                                       {"ttft_p50_ms", bench::percentile(r.ttft_ms, 50)},
                                                       {"ttft_p99_ms", bench::percentile(r.ttft_ms, 99)},
                                                       {"requests_per_s", r.requests_per_s()}});
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
            LA_ASSIGN_OR_RETURN(auto r, run_quiet(w, lm, label, ec, 1));
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
    LA_RETURN_IF_ERROR(skew_sweep(o, lm, base, out));
    LA_RETURN_IF_ERROR(rate_sweep(o, lm, base, out));
    return capacity_sweep(o, lm, base, out);
}

}  // namespace lazyattn::cli
