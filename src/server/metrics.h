// Metrics: the server's counters and histograms, rendered with the engine's SchedulerStats
// snapshot as Prometheus text exposition (version 0.0.4) for GET /metrics. Every name starts with
// lazyattn_; docs/api.md lists them. Thread-safe: HTTP workers record, any thread renders.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/rag_request.h"
#include "engine/scheduler.h"

namespace lazyattn::server {

// A cumulative histogram with fixed upper bounds (the +Inf bucket is implied).
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double value);
    void render(std::string& out, const std::string& name, const std::string& help) const;

private:
    std::vector<double> bounds_;
    std::vector<int64_t> counts_;  // per bucket, not cumulative; the last is +Inf
    double sum_ = 0;
    int64_t count_ = 0;
};

class Metrics {
public:
    Metrics();

    // One finished HTTP exchange; the path is folded onto its route (ids dropped, unknown paths
    // become "other") so label values stay few.
    void count_request(const std::string& path, int status);
    void observe_ttft(double seconds);
    void observe_latency(double seconds);
    // Token accounting of one request that reached the engine (finished or not).
    void record_tokens(const engine::RequestStats& stats);
    void count_disconnect();

    std::string render(const engine::SchedulerStats& stats) const;

    static std::string route_label(const std::string& path);

private:
    mutable std::mutex mu_;
    std::map<std::pair<std::string, int>, int64_t> requests_;  // (route, status) -> count
    Histogram ttft_;
    Histogram latency_;
    int64_t generated_tokens_ = 0;
    int64_t prompt_tokens_ = 0;
    int64_t reused_tokens_ = 0;
    int64_t disconnects_ = 0;
};

}  // namespace lazyattn::server
