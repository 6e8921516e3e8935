// Runs a workload through the Scheduler in-process (no HTTP) in one cache mode, with a closed
// loop of concurrent clients or the workload's Poisson arrival times, and measures what the
// LazyAttention paper reports: TTFT, time per output token, end-to-end latency, throughput,
// tokens prefilled vs reused, segment hit ratio and peak KV blocks. The first `warmup_requests`
// run (they fill the cache) but are left out of every statistic: the steady state is measured.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/rag_stats.h"
#include "bench/rag_workload.h"
#include "engine/engine_config.h"
#include "engine/scheduler/scheduler.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::bench {

struct RunConfig {
    std::string label;  // how the run is reported ("lazy", "lazy (floor)", ...)
    engine::EngineConfig engine;
    int32_t clients = 4;          // closed loop, when the workload has no arrival times
    int32_t warmup_requests = 0;  // the stream's first requests, run but not measured
    bool prewarm = false;         // compute every pool document first (the TTFT floor)
};

// Everything below covers the measured requests only (the stream after the warm-up).
struct RunResult {
    std::string label;
    std::string mode;
    int32_t warmup_requests = 0;
    std::vector<double> ttft_ms, tpot_ms, e2e_ms;  // per measured request, in submission order
    double wall_s = 0;                             // the whole run, warm-up included
    double measured_s = 0;                         // from the warm-up's last completion to the last completion
    int64_t output_tokens = 0;
    int64_t prefill_tokens = 0, reused_tokens = 0;
    int64_t segment_hits = 0, segment_misses = 0;
    int64_t segment_store_hits = 0;  // of the hits, loaded from a --kv-store tier
    // Per measured request (neighbours=K@ready, --quality balanced): documents looked up, and
    // of those served by their conditioned copy; and the background work over the whole run.
    std::vector<int32_t> conditioned_lookups, conditioned_served;
    engine::BackgroundStats background;
    int64_t background_rows = 0;
    // When background rows were computed: (seconds from the start, rows since the run began) at
    // each step that computed some, so a report can say in which span of time the work fell.
    std::vector<std::pair<double, int64_t>> background_rows_at;
    std::vector<double> completions_s;  // every request's completion, in completion order (from the start)
    // Per measured request, in submission order, seconds from the start: when it was submitted
    // and when it completed (the windows of bench_rag_report.h's run_windows).
    std::vector<double> submitted_s, completed_s;

    // Requests per second over the last fifth of the measured completions: the steady state once
    // background work (conditioned copies) has formed.
    double requests_per_s_last_fifth() const {
        const size_t measured = completions_s.size() - std::min(completions_s.size(), size_t(warmup_requests));
        const size_t n = measured / 5;
        if (n == 0 || completions_s.size() < n + 1) return 0;
        const double span = completions_s.back() - completions_s[completions_s.size() - n - 1];
        return span > 0 ? double(n) / span : 0;
    }
    store::StoreStats store;      // per tier (the whole run, warm-up included)
    CompulsoryMisses compulsory;  // first touches among the measured document lookups
    int32_t peak_blocks = 0, pool_blocks = 0;
    int64_t preemptions = 0;
    int64_t steps = 0;
    // The scheduler's steps by what they carried (the whole run, warm-up included).
    engine::SchedulerStats::StepKind decode_only, prefill_only, mixed;

    double requests_per_s() const { return measured_s > 0 ? double(ttft_ms.size()) / measured_s : 0; }
    double output_tok_per_s() const { return measured_s > 0 ? double(output_tokens) / measured_s : 0; }
    double hit_ratio() const {
        return segment_hits + segment_misses > 0 ? double(segment_hits) / double(segment_hits + segment_misses) : 0;
    }
};

using Progress = std::function<void(int32_t done, int32_t total)>;

Expected<RunResult> run_workload(const Workload& w, model::Model& model, const tokenizer::Tokenizer& tokenizer,
                                 const RunConfig& config, const Progress& progress = {});

double percentile(std::vector<double> v, double p);
double mean(const std::vector<double>& v);

}  // namespace lazyattn::bench
