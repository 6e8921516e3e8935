#include "server/metrics.h"

#include <cstdio>

namespace lazyattn::server {
namespace {

std::string number(double v, int digits = 12) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void scalar(std::string& out, const std::string& name, const char* type, const std::string& help, double v) {
    header(out, name, type, help);
    out += name + " " + number(v) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
    size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) ++i;
    ++counts_[i];
    sum_ += value;
    ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
    header(out, name, "histogram", help);
    int64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cumulative += counts_[i];
        out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
    out += name + "_sum " + number(sum_) + "\n";
    out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      latency_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}) {}

std::string Metrics::route_label(const std::string& path) {
    static const char* kRoutes[] = {"/v1/completions", "/v1/chat/completions", "/v1/documents", "/v1/models", "/health",
                                    "/metrics"};
    for (const char* r : kRoutes) {
        if (path == r) return r;
    }
    if (path.rfind("/v1/documents/", 0) == 0) return "/v1/documents/{id}";
    return "other";
}

void Metrics::count_request(const std::string& path, int status) {
    const std::string route = route_label(path);
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_[{route, status}];
}

void Metrics::observe_ttft(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    ttft_.observe(seconds);
}

void Metrics::observe_latency(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    latency_.observe(seconds);
}

void Metrics::record_tokens(const engine::RequestStats& stats) {
    std::lock_guard<std::mutex> lock(mu_);
    generated_tokens_ += stats.num_generated;
    prompt_tokens_ += stats.num_prompt_tokens;
    reused_tokens_ += stats.reused_tokens;
}

void Metrics::count_disconnect() {
    std::lock_guard<std::mutex> lock(mu_);
    ++disconnects_;
}

std::string Metrics::render(const engine::SchedulerStats& s) const {
    std::string out;
    std::lock_guard<std::mutex> lock(mu_);
    header(out, "lazyattn_http_requests_total", "counter", "HTTP requests answered, by route and status code");
    for (const auto& [key, n] : requests_) {
        out += "lazyattn_http_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
               "\"} " + std::to_string(n) + "\n";
    }
    ttft_.render(out, "lazyattn_time_to_first_token_seconds", "submission to first generated token");
    latency_.render(out, "lazyattn_request_duration_seconds", "end-to-end latency of generation requests");
    scalar(out, "lazyattn_generated_tokens_total", "counter", "tokens generated", double(generated_tokens_));
    scalar(out, "lazyattn_client_disconnects_total", "counter", "streams cancelled because the client went away",
           double(disconnects_));
    // Per request, as usage reports them: computed + reused = prompt tokens.
    scalar(out, "lazyattn_prompt_tokens_total", "counter", "prompt tokens of requests that reached the engine",
           double(prompt_tokens_));
    scalar(out, "lazyattn_prompt_tokens_computed_total", "counter",
           "prompt tokens computed (not found in the KV cache)", double(prompt_tokens_ - reused_tokens_));
    scalar(out, "lazyattn_prompt_tokens_reused_total", "counter",
           "prompt tokens served from the KV cache (cached_tokens)", double(reused_tokens_));
    scalar(out, "lazyattn_engine_prefill_tokens_total", "counter",
           "prompt tokens the engine ran through the model (shared segment jobs once, recomputes included)",
           double(s.prompt_tokens_computed));
    scalar(out, "lazyattn_segment_hits_total", "counter", "document segments found cached", double(s.segment_hits));
    scalar(out, "lazyattn_segment_misses_total", "counter", "document segments not cached", double(s.segment_misses));
    scalar(out, "lazyattn_segment_jobs_total", "counter", "missing segments computed (shared jobs count once)",
           double(s.segment_jobs));
    scalar(out, "lazyattn_preemptions_total", "counter", "requests preempted for KV blocks", double(s.preemptions));
    scalar(out, "lazyattn_engine_steps_total", "counter", "forward steps run", double(s.steps));
    header(out, "lazyattn_engine_requests_total", "counter", "requests the engine ended, by outcome");
    out += "lazyattn_engine_requests_total{outcome=\"finished\"} " + std::to_string(s.requests_finished) + "\n";
    out += "lazyattn_engine_requests_total{outcome=\"cancelled\"} " + std::to_string(s.requests_cancelled) + "\n";
    out += "lazyattn_engine_requests_total{outcome=\"failed\"} " + std::to_string(s.requests_failed) + "\n";
    scalar(out, "lazyattn_requests_running", "gauge", "requests admitted and holding KV", s.num_running);
    scalar(out, "lazyattn_queue_depth", "gauge", "requests waiting for admission", s.num_waiting);
    scalar(out, "lazyattn_kv_blocks_total", "gauge", "KV blocks in the pool", s.blocks_total);
    scalar(out, "lazyattn_kv_blocks_used", "gauge", "KV blocks referenced by requests, jobs or pins", s.blocks_used);
    scalar(out, "lazyattn_kv_blocks_cached", "gauge", "unreferenced KV blocks still holding reusable content",
           s.blocks_cached_free);
    scalar(out, "lazyattn_kv_blocks_free", "gauge", "unreferenced KV blocks (cached ones included)", s.blocks_free);
    return out;
}

}  // namespace lazyattn::server
