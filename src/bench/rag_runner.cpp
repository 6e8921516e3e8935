#include "bench/rag_runner.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "core/timer.h"
#include "engine/engine_core.h"
#include "engine/request/request_handle.h"
#include "engine/serving_engine.h"

namespace lazyattn::bench {

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = p / 100.0 * double(v.size() - 1);
    const size_t lo = size_t(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

double mean(const std::vector<double>& v) {
    return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

namespace {

// Computes every document the stream uses (the floor run measures only the tails).
Status prewarm(engine::EngineCore& s, const Workload& w) {
    std::vector<bool> used(w.docs.size(), false);
    for (const auto& ids : w.request_docs) {
        for (int32_t d : ids) used[d] = true;
    }
    for (size_t d = 0; d < w.docs.size(); ++d) {
        if (!used[d]) continue;
        LA_ASSIGN_OR_RETURN(auto h, s.add(engine::documents_only_request("", {w.docs[d]})));
        while (!h->finished()) s.step();
    }
    return {};
}

}  // namespace

namespace {

// Fills the measured part of `r` from the per-request stats (requests [warmup, n)).
void collect(const Workload& w, const std::vector<std::shared_ptr<engine::RequestHandle>>& handles,
             const std::vector<double>& lag_ms, const std::vector<double>& submitted_s,
             const std::vector<double>& completed_s, int32_t warmup, RunResult& r) {
    for (size_t i = size_t(warmup); i < handles.size(); ++i) {
        const engine::RequestStats st = handles[i]->stats();
        r.submitted_s.push_back(submitted_s[i]);
        r.completed_s.push_back(completed_s[i]);
        r.ttft_ms.push_back(st.ttft_ms + lag_ms[i]);
        r.e2e_ms.push_back(st.ttft_ms + st.decode_ms + lag_ms[i]);
        r.tpot_ms.push_back(st.num_generated > 1 ? st.decode_ms / (st.num_generated - 1) : 0.0);
        r.output_tokens += st.num_generated;
        r.prefill_tokens += st.prefill_tokens;
        r.reused_tokens += st.reused_tokens;
        r.segment_hits += st.segments_hit;
        r.segment_misses += st.segments_missed;
        r.segment_store_hits += st.segments_from_store;
        r.conditioned_lookups.push_back(st.conditioned_lookups);
        r.conditioned_served.push_back(st.segments_conditioned);
    }
    r.compulsory = count_compulsory_misses(w.request_docs, warmup);
}

}  // namespace

Expected<RunResult> run_workload(const Workload& w, model::Model& model, const tokenizer::Tokenizer& tokenizer,
                                 const RunConfig& config, const Progress& progress) {
    const int32_t n = int32_t(w.requests.size());
    if (config.warmup_requests < 0 || config.warmup_requests >= n) {
        return invalid_argument("the warm-up must leave at least one of the " + std::to_string(n) +
                                " requests to measure");
    }
    engine::EngineCore core(model, tokenizer, config.engine);
    engine::Scheduler& s = core.scheduler();
    if (config.prewarm) LA_RETURN_IF_ERROR(prewarm(core, w));
    const engine::SchedulerStats before = s.stats();
    const bool poisson = !w.arrival_s.empty() && w.arrival_s.back() > 0;
    std::vector<std::shared_ptr<engine::RequestHandle>> handles(n);
    std::vector<double> lag_ms(n, 0.0);                            // submission later than the scheduled arrival
    std::vector<double> done_s;                                    // completion times, in completion order
    std::vector<double> submitted_s(n, 0.0), completed_s(n, 0.0);  // per request (seconds)
    RunResult r;
    r.label = config.label;
    r.mode = engine::cache_mode_name(config.engine.cache_mode);
    r.warmup_requests = config.warmup_requests;
    r.pool_blocks = s.kv().kv_cache().pool().num_blocks();
    const double t0 = now_ms();
    int32_t next = 0, done = 0, in_flight = 0;
    std::vector<bool> collected(n, false);
    while (done < n) {
        const double now = now_ms() - t0;
        while (next < n && (poisson ? w.arrival_s[next] * 1000.0 <= now : in_flight < config.clients)) {
            LA_ASSIGN_OR_RETURN(handles[next], core.add(w.requests[next]));
            lag_ms[next] = poisson ? now - w.arrival_s[next] * 1000.0 : 0.0;
            submitted_s[next] = poisson ? w.arrival_s[next] : now / 1000.0;
            ++next;
            ++in_flight;
        }
        if (!core.step() && in_flight == 0 && next < n) {  // idle until the next arrival
            const double wait = w.arrival_s[next] * 1000.0 - (now_ms() - t0);
            if (wait > 0) std::this_thread::sleep_for(std::chrono::microseconds(int64_t(wait * 1000)));
        }
        // Only runs that make copies in the background read the stats (a copy of them) each step.
        if (const int64_t rows =
                config.engine.condition_after > 0 ? s.stats().background_rows - before.background_rows : 0;
            rows != (r.background_rows_at.empty() ? 0 : r.background_rows_at.back().second)) {
            r.background_rows_at.emplace_back((now_ms() - t0) / 1000.0, rows);
        }
        // Peak pool use in the steady state (the warm-up's first wave is not representative).
        if (done >= config.warmup_requests) r.peak_blocks = std::max(r.peak_blocks, s.kv().kv_cache().num_used());
        for (int32_t i = 0; i < next; ++i) {
            if (collected[i] || !handles[i]->finished()) continue;
            collected[i] = true;
            ++done;
            --in_flight;
            done_s.push_back((now_ms() - t0) / 1000.0);
            completed_s[i] = done_s.back();
            const engine::RagResult res = handles[i]->wait();
            if (res.finish_reason == engine::FinishReason::kError) return res.status;
            if (progress) progress(done, n);
        }
    }
    r.wall_s = (now_ms() - t0) / 1000.0;
    r.measured_s = measured_span_s(done_s, config.warmup_requests);
    collect(w, handles, lag_ms, submitted_s, completed_s, config.warmup_requests, r);
    const engine::SchedulerStats after = s.stats();
    r.preemptions = after.preemptions - before.preemptions;
    r.steps = after.steps - before.steps;
    auto delta = [](engine::SchedulerStats::StepKind a, const engine::SchedulerStats::StepKind& b) {
        a.steps -= b.steps;
        a.decode_rows -= b.decode_rows;
        a.prefill_rows -= b.prefill_rows;
        a.forward_ms -= b.forward_ms;
        return a;
    };
    r.decode_only = delta(after.decode_only, before.decode_only);
    r.prefill_only = delta(after.prefill_only, before.prefill_only);
    r.mixed = delta(after.mixed, before.mixed);
    r.store = after.store;
    r.background = after.background;
    r.completions_s = done_s;
    r.background_rows = after.background_rows - before.background_rows;
    return r;
}

}  // namespace lazyattn::bench
