// What `lazyattn bench rag` and its sweeps share: the KV budget a run gets, the warm-up a sweep
// point uses, and one run's summary as JSON (percentiles with bootstrap intervals, throughput in
// the steady state, hit ratio next to the compulsory-miss share that caps it).
#pragma once

#include <nlohmann/json.hpp>

#include "bench/kv_budget.h"
#include "bench/rag_runner.h"
#include "cli/commands.h"
#include "model/model_config.h"

namespace lazyattn::cli {

// The budget for `docs` documents' worth (> 0), or the options' own (--kv-budget-docs, else
// --kv-cache-mb) when docs is 0.
Expected<bench::KvBudget> rag_kv_budget(const BenchRagOptions& o, const model::ModelConfig& model, double docs = 0);

// Warm-up requests of a sweep point: --sweep-warmup-requests, else --warmup-requests, capped so
// that at least half of the point's requests are measured.
int32_t sweep_warmup(const BenchRagOptions& o);

// Summary statistics of a run (no per-request arrays).
nlohmann::json run_summary_json(const bench::RunResult& r);
// Of the measured requests in five equal parts, in submission order: the share of documents looked
// up with neighbours=K@ready that their conditioned copy served (how the copies form over time).
std::vector<double> conditioned_share_by_fifth(const bench::RunResult& r);
nlohmann::json conditioned_json(const bench::RunResult& r);

// The measured stream in equal spans of time, from the first measured request's submission
// (its arrival, open loop) to the last completion: the requests submitted in each, the share of
// their document lookups served by conditioned copies, their TTFT p50 and p99 and time per
// output token p50, the completions in the span per second and the background rows computed in
// it. How copies form over a long run beside what requests get, and when the work is done.
struct RunWindow {
    double start_s = 0, end_s = 0;
    int32_t requests = 0;
    int64_t lookups = 0, served = 0;
    double ttft_p50_ms = 0, ttft_p99_ms = 0, tpot_p50_ms = 0;
    double completed_per_s = 0;
    int64_t background_rows = 0;
    double conditioned_share() const { return lookups > 0 ? double(served) / double(lookups) : 0.0; }
};
std::vector<RunWindow> run_windows(const bench::RunResult& r, int32_t num_windows);
nlohmann::json windows_json(const std::vector<RunWindow>& windows);

}  // namespace lazyattn::cli
