#include "server/stats_reporter.h"

#include <chrono>

#include "core/log.h"
#include "core/timer.h"

namespace lazyattn::server {

StatsReporter::StatsReporter(const engine::ServingEngine& engine, const Metrics& metrics, double interval_s)
    : engine_(engine), metrics_(metrics), interval_s_(interval_s), thread_([this] { run(); }) {}

StatsReporter::~StatsReporter() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void StatsReporter::run() {
    engine::SchedulerStats last = engine_.stats();
    int64_t last_generated = metrics_.generation_tokens();
    double last_ms = now_ms();
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::duration<double>(interval_s_), [&] { return stopping_; })) {
        const engine::SchedulerStats s = engine_.stats();
        const engine::EngineHealth h = engine_.health();
        const int64_t generated = metrics_.generation_tokens();
        const double now = now_ms(), dt = (now - last_ms) / 1000.0;
        const bool busy = s.steps != last.steps || h.has_work;
        if (busy && dt > 0) {
            const int64_t hits = s.segment_hits - last.segment_hits, misses = s.segment_misses - last.segment_misses;
            log::info("engine stats",
                      {{"prompt_tok_s", double(s.prompt_tokens_computed - last.prompt_tokens_computed) / dt},
                       {"generation_tok_s", double(generated - last_generated) / dt},
                       {"running", h.num_running},
                       {"waiting", h.num_waiting},
                       {"kv_usage_pct", s.blocks_total > 0 ? 100.0 * s.blocks_used / s.blocks_total : 0.0},
                       {"document_hit_pct", hits + misses > 0 ? 100.0 * double(hits) / double(hits + misses) : 0.0},
                       {"preemptions", double(s.preemptions - last.preemptions)}});
        }
        last = s;
        last_generated = generated;
        last_ms = now;
    }
}

}  // namespace lazyattn::server
