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

}  // namespace lazyattn::cli
