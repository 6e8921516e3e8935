// `lazyattn bench rag`: the RAG serving benchmark. One seeded request stream (its digest printed)
// runs in every cache mode in-process; then optional sweeps: document skew, Poisson arrival
// rate, and KV pool capacity (position-agnostic vs position-aware caching, with the analytic
// curves). Prints tables, writes one JSON file for bench/plot_rag.py.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/rag_runner.h"
#include "cli/commands.h"
#include "cli/model_path.h"
#include "core/progress.h"
#include "engine/loaded_model.h"

#include <memory>

namespace lazyattn::cli {
namespace {

using bench::RunResult;

nlohmann::json to_json(const RunResult& r) {
    using bench::percentile;
    return {{"label", r.label},
            {"mode", r.mode},
            {"ttft_ms", r.ttft_ms},
            {"tpot_ms", r.tpot_ms},
            {"e2e_ms", r.e2e_ms},
            {"ttft_mean_ms", bench::mean(r.ttft_ms)},
            {"ttft_p50_ms", percentile(r.ttft_ms, 50)},
            {"ttft_p90_ms", percentile(r.ttft_ms, 90)},
            {"ttft_p99_ms", percentile(r.ttft_ms, 99)},
            {"tpot_mean_ms", bench::mean(r.tpot_ms)},
            {"e2e_p50_ms", percentile(r.e2e_ms, 50)},
            {"wall_s", r.wall_s},
            {"requests_per_s", r.requests_per_s()},
            {"output_tok_per_s", r.output_tok_per_s()},
            {"prefill_tokens", r.prefill_tokens},
            {"reused_tokens", r.reused_tokens},
            {"hit_ratio", r.hit_ratio()},
            {"peak_blocks", r.peak_blocks},
            {"pool_blocks", r.pool_blocks},
            {"preemptions", r.preemptions}};
}

Expected<RunResult> run_one(const bench::Workload& w, engine::LoadedModel& lm, const BenchRagOptions& o,
                            const std::string& label, engine::EngineConfig ec, bool prewarm = false) {
    bench::RunConfig rc;
    rc.label = label;
    rc.engine = ec;
    rc.clients = o.clients;
    rc.prewarm = prewarm;
    std::unique_ptr<ProgressBar> bar;
    return bench::run_workload(w, *lm.model, *lm.tokenizer, rc, [&](int32_t d, int32_t t) {
        if (!bar) bar = std::make_unique<ProgressBar>(label, t);
        bar->update(d);
    });
}

void print_main_table(const std::vector<RunResult>& runs) {
    auto find = [&](const std::string& label) -> const RunResult* {
        for (const auto& r : runs) {
            if (r.label == label) return &r;
        }
        return nullptr;
    };
    const RunResult* block = find("block-attn");
    const RunResult* prefix = find("prefix");
    std::printf("\n%-14s %9s %9s %9s %9s %8s %8s %7s %8s %9s %9s %6s %6s %11s %10s %10s\n", "mode", "TTFT mean", "p50",
                "p90", "p99", "TPOT", "e2e p50", "req/s", "tok/s", "prefilled", "reused", "hit%", "peak", "p50 vs blk",
                "vs prefix", "thr vs blk");
    for (const auto& r : runs) {
        const double p50 = bench::percentile(r.ttft_ms, 50);
        auto ratio = [&](const RunResult* base) {
            return base ? bench::percentile(base->ttft_ms, 50) / std::max(p50, 1e-9) : 0.0;
        };
        std::printf(
            "%-14s %9.1f %9.1f %9.1f %9.1f %8.1f %8.1f %7.2f %8.1f %9lld %9lld %5.0f%% %6d %10.2fx %9.2fx %9.2fx\n",
            r.label.c_str(), bench::mean(r.ttft_ms), p50, bench::percentile(r.ttft_ms, 90),
            bench::percentile(r.ttft_ms, 99), bench::mean(r.tpot_ms), bench::percentile(r.e2e_ms, 50),
            r.requests_per_s(), r.output_tok_per_s(), (long long)r.prefill_tokens, (long long)r.reused_tokens,
            100.0 * r.hit_ratio(), r.peak_blocks, ratio(block), ratio(prefix),
            block ? r.requests_per_s() / std::max(block->requests_per_s(), 1e-9) : 0.0);
    }
    std::printf("(times in ms; TTFT ratios are block-attn's or prefix's p50 over this mode's: > 1 means faster)\n");
}

}  // namespace

int run_bench_rag(const BenchRagOptions& o) {
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    auto lm = engine::load_model(path, o.common.num_threads);
    if (!lm.ok()) {
        std::cerr << "error: " << lm.status().to_string() << "\n";
        return 1;
    }
    bench::WorkloadConfig wc = o.workload;
    wc.zipf_s = o.zipf.front();
    auto w = bench::make_workload(wc, *lm->tokenizer);
    if (!w.ok()) {
        std::cerr << "error: " << w.status().to_string() << "\n";
        return 2;
    }
    std::printf(
        "workload: %d documents x %d tokens, k=%d, zipf s=%.2f, tail %d, output %d, %d requests, %d clients; "
        "digest %016llx\n",
        wc.num_docs, wc.doc_tokens, wc.docs_per_request, wc.zipf_s, wc.tail_tokens, wc.output_tokens, wc.num_requests,
        o.clients, (unsigned long long)w->digest());
    if (!o.export_workload_path.empty()) {
        nlohmann::json reqs = nlohmann::json::array();
        for (const auto& r : w->requests) {
            reqs.push_back({{"segments", r.segments}, {"tail", r.tail}, {"max_tokens", r.max_tokens}});
        }
        std::ofstream(o.export_workload_path) << nlohmann::json{{"digest", w->digest()}, {"requests", reqs}}.dump();
    }
    engine::EngineConfig base;
    base.kv_dtype = o.common.kv_dtype;
    base.kv_cache_mb = o.kv_cache_mb;
    base.max_batch_tokens = o.max_batch_tokens;
    base.check_integrity = false;
    nlohmann::json out = {{"workload",
                           {{"num_docs", wc.num_docs},
                            {"doc_tokens", wc.doc_tokens},
                            {"k", wc.docs_per_request},
                            {"zipf_s", wc.zipf_s},
                            {"tail_tokens", wc.tail_tokens},
                            {"preamble_tokens", wc.preamble_tokens},
                            {"output_tokens", wc.output_tokens},
                            {"num_requests", wc.num_requests},
                            {"clients", o.clients},
                            {"seed", wc.seed},
                            {"digest", w->digest()}}}};
    std::vector<RunResult> runs;
    for (const auto& spec : o.modes) {
        auto variant = engine::parse_reuse_variant(spec);
        if (!variant.ok()) {
            std::cerr << "error: --modes " << spec << ": " << variant.status().to_string() << "\n";
            return 2;
        }
        engine::EngineConfig ec = base;
        ec.cache_mode = variant->mode;
        bench::Workload wv = *w;  // the same stream, read with this variant's settings
        for (auto& req : wv.requests) req.reuse = variant->reuse;
        auto r = run_one(wv, *lm, o, spec, ec);
        if (!r.ok()) {
            std::cerr << "\nerror: " << r.status().to_string() << "\n";
            return 1;
        }
        runs.push_back(*r);
    }
    if (o.floor) {
        engine::EngineConfig ec = base;
        auto r = run_one(*w, *lm, o, "floor (all cached)", ec, true);
        if (r.ok()) runs.push_back(*r);
    }
    print_main_table(runs);
    for (const auto& r : runs) out["runs"].push_back(to_json(r));
    if (Status st = run_bench_rag_sweeps(o, *lm, base, out); !st.ok()) {
        std::cerr << "error: " << st.to_string() << "\n";
        return 1;
    }
    if (!o.json_path.empty()) {
        std::ofstream(o.json_path) << out.dump(1);
        std::printf("\nwrote %s\n", o.json_path.c_str());
    }
    return 0;
}

}  // namespace lazyattn::cli
