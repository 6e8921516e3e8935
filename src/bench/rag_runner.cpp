#include "bench/rag_runner.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "core/timer.h"
#include "engine/scheduler.h"

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
Status prewarm(engine::Scheduler& s, const Workload& w) {
    std::vector<bool> used(w.docs.size(), false);
    for (const auto& ids : w.request_docs) {
        for (int32_t d : ids) used[d] = true;
    }
    for (size_t d = 0; d < w.docs.size(); ++d) {
        if (!used[d]) continue;
        const auto& doc = w.docs[d];
        engine::RagRequest r;
        r.segments.push_back(doc);
        r.tail = {doc.front()};
        r.max_tokens = 0;
        LA_ASSIGN_OR_RETURN(auto h, s.add(std::move(r)));
        while (!h->finished()) s.step();
    }
    return {};
}

}  // namespace

Expected<RunResult> run_workload(const Workload& w, model::Model& model, const tokenizer::Tokenizer& tokenizer,
                                 const RunConfig& config, const Progress& progress) {
    engine::Scheduler s(model, tokenizer, config.engine);
    if (config.prewarm) LA_RETURN_IF_ERROR(prewarm(s, w));
    const engine::SchedulerStats before = s.stats();
    const int32_t n = int32_t(w.requests.size());
    const bool poisson = !w.arrival_s.empty() && w.arrival_s.back() > 0;
    std::vector<std::shared_ptr<engine::RequestHandle>> handles(n);
    std::vector<double> lag_ms(n, 0.0);  // submission later than the scheduled arrival
    RunResult r;
    r.label = config.label;
    r.mode = engine::cache_mode_name(config.engine.cache_mode);
    r.pool_blocks = s.kv_cache().pool().num_blocks();
    const double t0 = now_ms();
    int32_t next = 0, done = 0, in_flight = 0;
    std::vector<bool> collected(n, false);
    while (done < n) {
        const double now = now_ms() - t0;
        while (next < n && (poisson ? w.arrival_s[next] * 1000.0 <= now : in_flight < config.clients)) {
            LA_ASSIGN_OR_RETURN(handles[next], s.add(w.requests[next]));
            lag_ms[next] = poisson ? now - w.arrival_s[next] * 1000.0 : 0.0;
            ++next;
            ++in_flight;
        }
        if (!s.step() && in_flight == 0 && next < n) {  // idle until the next arrival
            const double wait = w.arrival_s[next] * 1000.0 - (now_ms() - t0);
            if (wait > 0) std::this_thread::sleep_for(std::chrono::microseconds(int64_t(wait * 1000)));
        }
        r.peak_blocks = std::max(r.peak_blocks, s.kv_cache().num_used());
        for (int32_t i = 0; i < next; ++i) {
            if (collected[i] || !handles[i]->finished()) continue;
            collected[i] = true;
            ++done;
            --in_flight;
            const engine::RagResult res = handles[i]->wait();
            if (res.finish_reason == "error") return res.status;
            if (progress) progress(done, n);
        }
    }
    r.wall_s = (now_ms() - t0) / 1000.0;
    for (int32_t i = 0; i < n; ++i) {
        const engine::RequestStats st = handles[i]->stats();
        r.ttft_ms.push_back(st.ttft_ms + lag_ms[i]);
        r.e2e_ms.push_back(st.ttft_ms + st.decode_ms + lag_ms[i]);
        r.tpot_ms.push_back(st.num_generated > 1 ? st.decode_ms / (st.num_generated - 1) : 0.0);
        r.output_tokens += st.num_generated;
        r.prefill_tokens += st.prefill_tokens;
        r.reused_tokens += st.reused_tokens;
    }
    const engine::SchedulerStats after = s.stats();
    r.segment_hits = after.segment_hits - before.segment_hits;
    r.segment_misses = after.segment_misses - before.segment_misses;
    r.preemptions = after.preemptions - before.preemptions;
    r.steps = after.steps - before.steps;
    return r;
}

}  // namespace lazyattn::bench
