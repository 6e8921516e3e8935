// `lazyattn bench rag`: the RAG serving benchmark. One seeded request stream (its digest printed)
// runs in every cache mode in-process under a stated KV budget (documents' worth or MiB), the
// first --warmup-requests left out of the statistics; then optional sweeps: KV budget, document
// skew, Poisson arrival rate, and KV pool capacity (position-agnostic vs position-aware caching,
// with the analytic curves). Prints tables, writes one JSON file for bench/plot_rag.py.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/rag_runner.h"
#include "cli/bench_rag_report.h"
#include "cli/cli_options.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/data_files.h"
#include "cli/model_path.h"
#include "core/progress.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/quality_preset.h"

#include <memory>

namespace lazyattn::cli {
namespace {

// The digest as the console prints it (the JSON keeps the number too, for scripts that read it).
std::string hex_digest(uint64_t digest) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)digest);
    return hex;
}

using bench::RunResult;

nlohmann::json to_json(const RunResult& r, int32_t windows) {
    nlohmann::json j = run_summary_json(r);
    j["windows"] = windows_json(run_windows(r, windows));
    j["ttft_ms"] = r.ttft_ms;
    j["tpot_ms"] = r.tpot_ms;
    j["e2e_ms"] = r.e2e_ms;
    return j;
}

Expected<RunResult> run_one(const bench::Workload& w, engine::LoadedModel& lm, const BenchRagOptions& o,
                            const std::string& label, engine::EngineConfig ec, bool prewarm = false) {
    bench::RunConfig rc;
    rc.label = label;
    rc.engine = ec;
    rc.clients = o.clients;
    rc.warmup_requests = o.warmup_requests;
    rc.prewarm = prewarm;
    std::unique_ptr<ProgressBar> bar;
    return bench::run_workload(w, *lm.model, *lm.tokenizer, rc, [&](int32_t d, int32_t t) {
        if (!bar) bar = std::make_unique<ProgressBar>(label, t);
        bar->update(d);
    });
}

// Runs whose requests take conditioned copies where they exist (--quality balanced, accurate): how
// the copies formed over the measured stream, and TTFT and throughput against plain lazy's.
void print_conditioned(const std::vector<RunResult>& runs) {
    const RunResult* lazy = nullptr;
    for (const auto& r : runs) {
        if (r.label == "lazy" || (lazy == nullptr && r.label == "quality=fast")) lazy = &r;
    }
    bool header = false;
    for (const auto& r : runs) {
        int64_t lookups = 0;
        for (int32_t n : r.conditioned_lookups) lookups += n;
        if (lookups == 0 && r.label.rfind("quality=", 0) != 0) continue;
        if (!header) {
            std::printf(
                "\nconditioned copies: share of document lookups served by them, measured stream in fifths; "
                "background copies made / cancelled; TTFT p50, p99 and req/s against %s\n",
                lazy ? lazy->label.c_str() : "(no lazy run)");
            header = true;
        }
        std::printf("%-18s", r.label.c_str());
        for (double x : cli::conditioned_share_by_fifth(r)) std::printf(" %5.1f%%", 100 * x);
        std::printf("  last-fifth req/s %.3f  made %lld, cancelled %lld, rows %lld", r.requests_per_s_last_fifth(),
                    (long long)r.background.done, (long long)r.background.cancelled, (long long)r.background_rows);
        if (lazy != nullptr) {
            std::printf("  p50 %.2fx p99 %.2fx req/s %.2fx (last fifth %.2fx)",
                        bench::percentile(r.ttft_ms, 50) / std::max(bench::percentile(lazy->ttft_ms, 50), 1e-9),
                        bench::percentile(r.ttft_ms, 99) / std::max(bench::percentile(lazy->ttft_ms, 99), 1e-9),
                        r.requests_per_s() / std::max(lazy->requests_per_s(), 1e-9),
                        r.requests_per_s_last_fifth() / std::max(lazy->requests_per_s_last_fifth(), 1e-9));
        }
        std::printf("\n");
    }
}

// Plain lazy and the runs reading conditioned copies over time, each in its own equal spans
// (run_windows): how the copies form, and what TTFT and throughput requests get meanwhile; the
// last span against plain lazy's is the steady state issue 63's target speaks of.
void print_windows(const std::vector<RunResult>& runs, int32_t windows) {
    const RunResult* lazy = nullptr;
    for (const auto& r : runs) {
        if (r.label == "lazy" || (lazy == nullptr && r.label == "quality=fast")) lazy = &r;
    }
    auto shown = [&](const RunResult& r) {
        int64_t lookups = 0;
        for (int32_t n : r.conditioned_lookups) lookups += n;
        return &r == lazy || lookups > 0 || r.label.rfind("quality=", 0) == 0;
    };
    bool header = false;
    for (const auto& r : runs) {
        if (!shown(r)) continue;
        if (!header) {
            std::printf(
                "\nover time: the measured stream in %d equal spans of each run's own time; per span the share "
                "of document lookups served by conditioned copies, TTFT p50/p99 ms of the requests submitted in "
                "it, completions per second, background rows computed in it\n",
                windows);
            header = true;
        }
        const auto w = run_windows(r, windows);
        std::printf("%-18s", r.label.c_str());
        for (const RunWindow& x : w) {
            std::printf("  [%.0f-%.0fs] %3.0f%% %.0f/%.0f %.2f/s %lld", x.start_s, x.end_s, 100 * x.conditioned_share(),
                        x.ttft_p50_ms, x.ttft_p99_ms, x.completed_per_s, (long long)x.background_rows);
        }
        std::printf("\n");
    }
    if (lazy == nullptr) return;
    const auto base = run_windows(*lazy, windows);
    if (base.empty()) return;
    for (const auto& r : runs) {
        if (&r == lazy || !shown(r)) continue;
        const auto w = run_windows(r, windows);
        if (w.empty()) continue;
        std::printf(
            "%s vs %s, last span (steady state): TTFT p50 %.2fx (target <= 1.15x), p99 %.2fx, completions/s %.2fx "
            "(target >= 0.9x), conditioned share %.0f%%\n",
            r.label.c_str(), lazy->label.c_str(), w.back().ttft_p50_ms / std::max(base.back().ttft_p50_ms, 1e-9),
            w.back().ttft_p99_ms / std::max(base.back().ttft_p99_ms, 1e-9),
            w.back().completed_per_s / std::max(base.back().completed_per_s, 1e-9), 100 * w.back().conditioned_share());
    }
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
    std::printf("\n%-18s %8s %8s %15s %8s %7s %7s %8s %9s %9s %6s %6s %10s %9s %9s\n", "mode", "TTFT avg", "p50",
                "p50 95% CI", "p99", "TPOT", "req/s", "tok/s", "prefilled", "reused", "hit%", "peak", "p50 vs blk",
                "vs prefix", "thr vs blk");
    for (const auto& r : runs) {
        const double p50 = bench::percentile(r.ttft_ms, 50);
        const bench::Interval ci = bench::bootstrap_percentile_ci(r.ttft_ms, 50);
        auto ratio = [&](const RunResult* base) {  // "-" where that mode did not run
            char text[16] = "-";
            if (base)
                std::snprintf(text, sizeof text, "%.2fx", bench::percentile(base->ttft_ms, 50) / std::max(p50, 1e-9));
            return std::string(text);
        };
        char thr[16] = "-";
        if (block)
            std::snprintf(thr, sizeof thr, "%.2fx", r.requests_per_s() / std::max(block->requests_per_s(), 1e-9));
        char ci_text[40];
        std::snprintf(ci_text, sizeof ci_text, "[%.0f, %.0f]", ci.low, ci.high);
        std::printf("%-18s %8.1f %8.1f %15s %8.1f %7.1f %7.3f %8.1f %9lld %9lld %5.0f%% %6d %10s %9s %9s\n",
                    r.label.c_str(), bench::mean(r.ttft_ms), p50, ci_text, bench::percentile(r.ttft_ms, 99),
                    bench::mean(r.tpot_ms), r.requests_per_s(), r.output_tok_per_s(), (long long)r.prefill_tokens,
                    (long long)r.reused_tokens, 100.0 * r.hit_ratio(), r.peak_blocks, ratio(block).c_str(),
                    ratio(prefix).c_str(), thr);
    }
    std::printf("(times in ms; TTFT ratios are block-attn's or prefix's p50 over this mode's: > 1 means faster)\n");
    print_conditioned(runs);
    std::printf("\nsteps (whole run, warm-up included): count, decode rows, prefill rows, mean forward ms\n");
    for (const auto& r : runs) {
        std::printf("%-18s", r.label.c_str());
        for (const auto* k : {&r.decode_only, &r.prefill_only, &r.mixed}) {
            const char* name = k == &r.decode_only ? "decode-only" : k == &r.prefill_only ? "prefill-only" : "mixed";
            std::printf("  %s %lld/%lld/%lld/%.1f", name, (long long)k->steps, (long long)k->decode_rows,
                        (long long)k->prefill_rows, k->steps > 0 ? k->forward_ms / double(k->steps) : 0.0);
        }
        std::printf("  preemptions %lld\n", (long long)r.preemptions);
    }
    for (const auto& r : runs) {
        for (const store::TierStats& t : r.store.tiers) {
            std::printf(
                "%-18s store %s (%s): %lld hits (%lld measured document hits from the store), %lld misses, "
                "load %.2f ms mean, %.1f MiB read, %lld written (%.1f MiB), %lld errors, %lld rejected\n",
                r.label.c_str(), t.name.c_str(), t.where.c_str(), (long long)t.hits, (long long)r.segment_store_hits,
                (long long)t.misses, t.hits > 0 ? t.load_ms / t.hits : 0.0, t.bytes_read / 1048576.0,
                (long long)t.writes, t.bytes_written / 1048576.0, (long long)t.errors, (long long)t.rejected);
        }
    }
    if (!runs.empty()) {
        const auto& c = runs.front().compulsory;
        std::printf(
            "compulsory misses: %lld of %lld measured document lookups (%.1f%%) are first touches: no cache "
            "avoids them, so the hit ratio is at most %.1f%%\n",
            (long long)c.compulsory, (long long)c.lookups, 100 * c.fraction(), 100 * (1 - c.fraction()));
    }
}

// Everything an HTTP peer needs to replay the same token stream under the same budget.
nlohmann::json exported_workload(const bench::Workload& w, const bench::WorkloadConfig& wc, const BenchRagOptions& o,
                                 const bench::KvBudget& budget) {
    nlohmann::json reqs = nlohmann::json::array();
    for (size_t i = 0; i < w.requests.size(); ++i) {
        const auto& r = w.requests[i];
        reqs.push_back({{"segments", r.segments},
                        {"first_segment_is_preamble", r.first_segment_is_preamble},
                        {"doc_ids", w.request_docs[i]},
                        {"tail", r.tail},
                        {"max_tokens", r.max_tokens},
                        {"arrival_s", w.arrival_s[i]}});
    }
    return {{"digest", w.digest()},
            {"digest_hex", hex_digest(w.digest())},
            {"num_docs", wc.num_docs},
            {"doc_tokens", wc.doc_tokens},
            {"k", wc.docs_per_request},
            {"zipf_s", wc.zipf_s},
            {"seed", wc.seed},
            {"warmup_requests", o.warmup_requests},
            {"kv_budget_blocks", budget.num_blocks},
            {"kv_budget_mib", budget.mib()},
            {"kv_budget_docs", budget.docs()},
            {"kv_block_size", budget.block_size},
            {"kv_bytes_per_token", budget.bytes_per_token()},
            {"requests", reqs}};
}

// The engine every mode's run starts from: the command's options under the stated KV budget.
engine::EngineConfig rag_engine_config(const BenchRagOptions& o, const bench::KvBudget& budget) {
    engine::EngineConfig base = engine_config_for(o.common);
    base.kv_num_blocks = budget.num_blocks;
    base.max_batch_tokens = o.max_batch_tokens;
    base.max_prefill_while_decoding = o.max_prefill_while_decoding;
    base.check_integrity = false;
    return base;
}

// The workload's line of the JSON report.
nlohmann::json workload_json(const bench::Workload& w, const bench::WorkloadConfig& wc, const BenchRagOptions& o,
                             const bench::KvBudget& budget) {
    return {{"num_docs", wc.num_docs},
            {"doc_tokens", wc.doc_tokens},
            {"k", wc.docs_per_request},
            {"zipf_s", wc.zipf_s},
            {"tail_tokens", wc.tail_tokens},
            {"preamble_tokens", wc.preamble_tokens},
            {"output_tokens", wc.output_tokens},
            {"num_requests", wc.num_requests},
            {"clients", o.clients},
            {"arrival_rate", wc.arrival_rate},
            {"warmup_requests", o.warmup_requests},
            {"kv_budget_blocks", budget.num_blocks},
            {"kv_budget_mib", budget.mib()},
            {"kv_budget_docs", budget.docs()},
            {"kv_bytes_per_token", budget.bytes_per_token()},
            {"seed", wc.seed},
            {"max_batch_tokens", o.max_batch_tokens},
            {"max_prefill_while_decoding", o.max_prefill_while_decoding},
            {"digest", w.digest()},
            {"digest_hex", hex_digest(w.digest())}};
}

// Each --modes variant on the stream, then the floor, into *runs; a mode the budget refuses is
// noted in out["refused"]. The command's exit code: 0, 2 for a bad --modes, 1 for a failed run.
int run_modes(const bench::Workload& w, const bench::WorkloadConfig& wc, engine::LoadedModel& lm,
              const BenchRagOptions& o, const engine::EngineConfig& base, nlohmann::json& out,
              std::vector<RunResult>* runs) {
    // Not given: every cache mode, or none when presets are asked for (--quality alone runs them).
    const std::vector<std::string> modes = o.modes.empty() && o.quality.empty() ? engine::cache_mode_names() : o.modes;
    for (const auto& spec : modes) {
        auto variant = engine::parse_reuse_variant(spec);
        if (!variant.ok()) {
            std::cerr << "error: --modes " << spec << ": " << variant.status().to_string() << "\n";
            return 2;
        }
        engine::EngineConfig ec = base;
        ec.cache_mode = variant->mode;
        if (variant->kv_types) ec.kv_types = *variant->kv_types;  // "lazy@q8_0": its own KV types
        bench::Workload wv = w;                                   // the same stream, read with this variant's settings
        for (auto& req : wv.requests) req.reuse = variant->reuse;
        auto r = run_one(wv, lm, o, spec, ec);
        if (!r.ok() && r.status().code() == StatusCode::kResourceExhausted) {  // the budget, not a failure
            std::printf("%s: refused under this KV budget: %s\n", spec.c_str(), r.status().message().c_str());
            out["refused"].push_back({{"label", spec}, {"reason", r.status().message()}});
            continue;
        }
        if (!r.ok()) {
            std::cerr << "\nerror: " << r.status().to_string() << "\n";
            return 1;
        }
        runs->push_back(*r);
    }
    for (const auto& name : o.quality) {  // the presets, as `serve --quality` runs them
        const auto preset = engine::parse_quality_preset(name);
        if (!preset) {
            std::cerr << "error: --quality " << name << ": none of fast, balanced, accurate\n";
            return 2;
        }
        engine::EngineConfig ec = base;
        ec.cache_mode = engine::CacheMode::kLazy;
        ec.condition_after = o.condition_after >= 0 ? o.condition_after : engine::preset_condition_after(*preset);
        bench::Workload wv = w;
        for (auto& req : wv.requests) req.reuse = engine::preset_document_reuse(*preset);
        auto r = run_one(wv, lm, o, "quality=" + name, ec);
        if (!r.ok()) {
            std::cerr << "\nerror: " << r.status().to_string() << "\n";
            return 1;
        }
        runs->push_back(*r);
    }
    if (o.floor) {  // on a pool that holds every document and the clients' working sets, whatever the budget
        engine::EngineConfig ec = base;
        auto all = rag_kv_budget(o, lm.model->config(), wc.num_docs + o.clients * (wc.docs_per_request + 1));
        if (all.ok()) ec.kv_num_blocks = all->num_blocks;
        auto r = run_one(w, lm, o, "floor (all cached)", ec, true);
        if (r.ok()) runs->push_back(*r);
    }
    return 0;
}

}  // namespace

int run_bench_rag(const BenchRagOptions& o) {
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    auto lm = engine::load_model(path, o.common.device, o.common.num_threads);
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
    auto budget = rag_kv_budget(o, lm->model->config());
    if (!budget.ok()) {
        std::cerr << "error: KV budget: " << budget.status().to_string() << "\n";
        return 2;
    }
    if (o.warmup_requests >= wc.num_requests) {
        std::cerr << "error: --warmup-requests must leave requests to measure (it is " << o.warmup_requests << " of "
                  << wc.num_requests << ")\n";
        return 2;
    }
    char arrivals[96];
    if (wc.arrival_rate > 0) {
        std::snprintf(arrivals, sizeof arrivals, "open loop, Poisson arrivals at %.3g req/s", wc.arrival_rate);
    } else {
        std::snprintf(arrivals, sizeof arrivals, "%d clients (closed loop)", o.clients);
    }
    std::printf(
        "workload: %d documents x %d tokens, k=%d, zipf s=%.2f, tail %d, output %d, %d requests (first %d are "
        "warm-up, not measured), %s; digest %016llx\nKV budget: %s, the whole pool of each mode\n",
        wc.num_docs, wc.doc_tokens, wc.docs_per_request, wc.zipf_s, wc.tail_tokens, wc.output_tokens, wc.num_requests,
        o.warmup_requests, arrivals, (unsigned long long)w->digest(), budget->describe().c_str());
    if (!o.export_workload_path.empty()) {
        std::ofstream(o.export_workload_path) << exported_workload(*w, wc, o, *budget).dump();
    }
    const engine::EngineConfig base = rag_engine_config(o, *budget);
    nlohmann::json out = {{"workload", workload_json(*w, wc, o, *budget)}};
    std::vector<RunResult> runs;
    if (int rc = run_modes(*w, wc, *lm, o, base, out, &runs); rc != 0) return rc;
    print_main_table(runs);
    print_windows(runs, o.windows);
    for (const auto& r : runs) out["runs"].push_back(to_json(r, o.windows));
    auto write_json = [&] {
        if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(1);
    };
    write_json();  // the main runs are kept even if a long sweep is interrupted
    if (Status st = run_bench_rag_sweeps(o, *lm, base, out); !st.ok()) {
        std::cerr << "error: " << st.to_string() << "\n";
        return 1;
    }
    write_json();
    if (!o.json_path.empty()) std::printf("\nwrote %s\n", o.json_path.c_str());
    return 0;
}

namespace {

CLI::App* add_bench_rag_command(CLI::App& parent, BenchRagOptions& o) {
    CLI::App* br = parent.add_subcommand("rag", "the RAG serving benchmark: every cache mode on one request stream");
    add_common_options(br, o.common);
    br->add_option("--docs", o.workload.num_docs, "documents in the pool")->check(CLI::Range(1, 1000000));
    br->add_option("--doc-tokens", o.workload.doc_tokens, "tokens per document")->check(CLI::Range(1, 1000000));
    br->add_option("--k", o.workload.docs_per_request, "documents per request")->check(CLI::Range(1, 1000));
    br->add_option("--zipf", o.zipf, "Zipf exponent of document popularity (0 = uniform)")
        ->check(CLI::NonNegativeNumber);
    br->add_option("--tail-tokens", o.workload.tail_tokens, "question tokens")->check(CLI::Range(1, 100000));
    br->add_option("--output-tokens", o.workload.output_tokens, "tokens generated per request")
        ->check(CLI::Range(0, 100000));
    br->add_option("--requests", o.workload.num_requests, "requests in the stream")->check(CLI::Range(1, 1000000));
    br->add_option("--clients", o.clients, "concurrent clients (closed loop)")->check(CLI::Range(1, 4096));
    br->add_option("--rate", o.workload.arrival_rate,
                   "open loop: requests arrive as a Poisson process at this rate (req/s; TTFT counts from the "
                   "arrival) instead of --clients; set it below the saturation rate to measure a server with "
                   "idle capacity (what background conditioned copies run in); 0: closed loop")
        ->check(CLI::NonNegativeNumber);
    br->add_option("--windows", o.windows,
                   "equal spans of time the measured stream is reported in: conditioned-copy share, TTFT p50/p99 "
                   "and completions per second over time")
        ->check(CLI::Range(1, 100));
    br->add_option("--seed", o.workload.seed, "workload seed");
    br->add_option("--modes", o.modes,
                   "cache modes, each optionally with document reuse settings: MODE[:REUSE], e.g. lazy:anchor "
                   "(see bench quality); default: every mode, none with --quality");
    br->add_option("--quality", o.quality,
                   "quality presets to run after the modes, each on lazy with its background work (no precompute): "
                   "fast, balanced, accurate (serve --quality)")
        ->check(CLI::IsMember({"fast", "balanced", "accurate"}));
    br->add_option("--condition-after", o.condition_after,
                   "sightings before a conditioned copy is made, for the --quality runs (default: the preset's)")
        ->check(CLI::Range(0, 1 << 20));
    br->add_option("--preamble-tokens", o.workload.preamble_tokens,
                   "a shared preamble (system prompt) of this many tokens before the documents")
        ->check(CLI::Range(0, 4096));
    br->add_option("--kv-cache-mb,--kv-budget-mib", o.kv_cache_mb, "KV budget (the whole pool) per mode, in MiB")
        ->check(CLI::PositiveNumber);
    br->add_option("--kv-budget-docs", o.kv_budget_docs,
                   "KV budget (the whole pool) in documents' worth, sized from the model's KV bytes per token "
                   "(replaces --kv-cache-mb)")
        ->check(CLI::PositiveNumber);
    br->add_option("--warmup-requests", o.warmup_requests,
                   "the stream's first requests run (filling the cache) but are left out of the statistics")
        ->check(CLI::Range(0, 1000000));
    br->add_option("--max-batch-tokens", o.max_batch_tokens, "rows per step")->check(CLI::PositiveNumber);
    br->add_option("--max-prefill-while-decoding", o.max_prefill_while_decoding,
                   "prefill rows a step may carry while requests decode (0: up to --max-batch-tokens)")
        ->check(CLI::NonNegativeNumber);
    br->add_option("--data", o.workload.passages_path, "QA file whose passages make up the documents");
    br->add_flag("!--no-floor", o.floor, "skip the all-cached floor run");
    br->add_option("--budget-sweep-docs", o.budget_sweep_docs,
                   "KV budgets in documents for the TTFT/throughput-vs-budget sweep")
        ->check(CLI::PositiveNumber);
    br->add_option("--skew-sweep", o.skew_sweep, "Zipf exponents for the throughput-vs-skew sweep");
    br->add_option("--rates", o.rates, "Poisson arrival rates (req/s) for the TTFT-vs-rate sweep");
    br->add_option("--capacity-docs", o.capacity_docs, "pool capacities (in documents) for the capacity sweep");
    br->add_option("--sweep-requests", o.sweep_requests, "requests per sweep point")->check(CLI::Range(1, 1000000));
    br->add_option("--sweep-warmup-requests", o.sweep_warmup_requests,
                   "warm-up requests per sweep point (default: --warmup-requests)")
        ->check(CLI::Range(0, 1000000));
    br->add_option("--sweep-modes", o.sweep_modes, "cache modes of the budget, skew and rate sweeps")
        ->check(cache_mode_check());
    br->add_option("--json", o.json_path, "write all results to this JSON file");
    br->add_option("--export-workload", o.export_workload_path, "write the request stream (token ids) as JSON");
    resolve_data_file_after_parse(br, o.workload.passages_path, "--data");
    return br;
}

}  // namespace

std::unique_ptr<Command> bench_rag_command() {
    return make_command<BenchRagOptions>(add_bench_rag_command, run_bench_rag);
}

}  // namespace lazyattn::cli
