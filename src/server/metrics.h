// Metrics: the server's counters and histograms, rendered with the engine's current state as
// Prometheus text exposition (version 0.0.4) for GET /metrics. Names keep the lazyattn_ prefix
// but use vLLM's stems and meanings (prompt_tokens_total, num_requests_running,
// kv_cache_usage_perc, time_to_first_token_seconds, request_success_total{finished_reason}, ...)
// so vLLM dashboards and alerts carry over; every series has a model_name label, as vLLM's do.
// lazyattn's own series (documents, segment jobs, HTTP, pool blocks) follow, then llama-server's
// llamacpp:* names over the same counts. docs/api.md lists them all. Thread-safe: HTTP workers record, any thread renders.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/request/rag_request.h"
#include "engine/scheduler/scheduler.h"
#include "engine/serving_engine.h"
#include "server/known_documents.h"

namespace lazyattn::server {

// A cumulative histogram with fixed upper bounds (the +Inf bucket is implied).
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double value);
    // `labels`: the series' label set without braces (e.g. model_name="m").
    void render(std::string& out, const std::string& name, const std::string& help, const std::string& labels) const;

private:
    std::vector<double> bounds_;
    std::vector<int64_t> counts_;  // per bucket, not cumulative; the last is +Inf
    double sum_ = 0;
    int64_t count_ = 0;
};

class Metrics {
public:
    explicit Metrics(std::string model_name);

    // One finished HTTP exchange; the path is folded onto its route (ids dropped, unknown paths
    // become "other") so label values stay few.
    void count_request(const std::string& path, int status);
    // A generation request the engine ended: its tokens, cache use, queue time and TTFT, and its
    // outcome ("stop", "length", "cancelled" counts as vLLM's "abort", "error").
    void record_request(const engine::RequestStats& stats, engine::FinishReason reason, double e2e_seconds);
    // The gap between two tokens of one request, as its client received them.
    void observe_inter_token(double seconds);
    void count_disconnect();

    // `stats` and `health` are the engine's state now (read at scrape time, not one step late).
    std::string render(const engine::SchedulerStats& stats, const engine::EngineHealth& health) const;
    // The known-document index's size (documents_from known), appended to `out`.
    void render_known(std::string& out, const KnownDocuments& known) const;

    static std::string route_label(const std::string& path);
    int64_t generation_tokens() const {
        std::lock_guard<std::mutex> lock(mu_);
        return generation_tokens_;
    }

private:
    const std::string model_label_;  // model_name="<escaped>"
    mutable std::mutex mu_;
    std::map<std::pair<std::string, int>, int64_t> requests_;  // (route, status) -> count
    std::map<std::string, int64_t> finished_;                  // finished_reason -> count
    Histogram ttft_;
    Histogram inter_token_;
    Histogram queue_time_;
    Histogram e2e_;
    int64_t generation_tokens_ = 0;
    int64_t prompt_tokens_ = 0;
    int64_t cached_prompt_tokens_ = 0;
    int64_t disconnects_ = 0;
    // For llama-server's series: prompt time (admission to first token) and decode time of the
    // requests that ended, and the most tokens one request held.
    double prompt_seconds_ = 0;
    double predicted_seconds_ = 0;
    int64_t max_request_tokens_ = 0;

    // llama-server's llamacpp:* series from the same counters (its dashboards carry over).
    void render_llamacpp(std::string& out, const engine::SchedulerStats& s, const engine::EngineHealth& h) const;
};

}  // namespace lazyattn::server
