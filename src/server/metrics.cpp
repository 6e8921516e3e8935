#include "server/metrics.h"

#include <algorithm>
#include <cstdio>

namespace lazyattn::server {
namespace {

std::string number(double v, int digits = 12) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}

// Prometheus label values escape backslash, double quote and newline.
std::string escape_label(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        out += c == '\n' ? 'n' : c;
        if (c == '\n') out.insert(out.size() - 1, "\\");
    }
    return out;
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// One series of a family: name{labels} value.
void sample(std::string& out, const std::string& name, const std::string& labels, double v) {
    out += name + "{" + labels + "} " + number(v) + "\n";
}

// The persistent store (--kv-store): per tier, labelled by kind and position (disk before Redis).
void render_store(std::string& out, const store::StoreStats& st, const std::string& model_label) {
    if (st.tiers.empty()) return;
    struct Series {
        const char* name;
        const char* help;
        double (*value)(const store::TierStats&);
    };
    static const Series series[] = {
        {"lazyattn_kv_store_hits_total", "document segments loaded from this store tier instead of computed",
         [](const store::TierStats& t) { return double(t.hits); }},
        {"lazyattn_kv_store_misses_total", "store lookups this tier could not answer with a usable entry",
         [](const store::TierStats& t) { return double(t.misses); }},
        {"lazyattn_kv_store_read_bytes_total", "bytes of entries loaded from this tier",
         [](const store::TierStats& t) { return double(t.bytes_read); }},
        {"lazyattn_kv_store_written_bytes_total", "bytes of entries written to this tier",
         [](const store::TierStats& t) { return double(t.bytes_written); }},
        {"lazyattn_kv_store_writes_total", "entries written to this tier",
         [](const store::TierStats& t) { return double(t.writes); }},
        {"lazyattn_kv_store_writes_skipped_total", "entries not written because the tier already held them",
         [](const store::TierStats& t) { return double(t.writes_skipped); }},
        {"lazyattn_kv_store_errors_total", "failed reads and writes of this tier (I/O, unreachable)",
         [](const store::TierStats& t) { return double(t.errors); }},
        {"lazyattn_kv_store_rejected_total", "corrupt or foreign entries found in this tier (never used)",
         [](const store::TierStats& t) { return double(t.rejected); }},
        {"lazyattn_kv_store_load_seconds_total", "time spent loading hits from this tier (read, verify, import)",
         [](const store::TierStats& t) { return t.load_ms / 1000.0; }},
    };
    static const Series gauges[] = {
        {"lazyattn_kv_store_bytes", "bytes of entries this tier holds (as far as this process knows)",
         [](const store::TierStats& t) { return double(t.usage.bytes); }},
        {"lazyattn_kv_store_max_bytes", "the tier's size cap (--kv-store-max-mib; 0: unbounded)",
         [](const store::TierStats& t) { return double(t.usage.max_bytes); }},
        {"lazyattn_kv_store_up",
         "1 while the tier answers, 0 while it is marked down (unreachable, not answering in time, answering "
         "garbage), misconfigured, or its calls keep failing",
         [](const store::TierStats& t) { return t.usage.up ? 1.0 : 0.0; }},
        {"lazyattn_kv_store_unserved_slots", "Redis Cluster slots no reachable master serves (their entries computed)",
         [](const store::TierStats& t) { return double(t.usage.unserved_slots); }},
    };
    static const Series usage_counters[] = {
        {"lazyattn_kv_store_evictions_total", "entries this process evicted from the tier to keep it under its cap",
         [](const store::TierStats& t) { return double(t.usage.evictions); }},
        {"lazyattn_kv_store_forgotten_total",
         "entries found gone from the tier (its own eviction, a manual delete) and dropped from its size account",
         [](const store::TierStats& t) { return double(t.usage.forgotten); }},
        {"lazyattn_kv_store_account_errors_total",
         "times the tier's size account was found broken or failing (then rebuilt from the entries present)",
         [](const store::TierStats& t) { return double(t.usage.account_errors); }},
    };
    auto per_tier = [&](const Series& x, const char* type) {
        header(out, x.name, type, x.help);
        for (size_t i = 0; i < st.tiers.size(); ++i) {
            sample(
                out, x.name,
                model_label + ",tier=\"" + escape_label(st.tiers[i].name) + "\",position=\"" + std::to_string(i) + "\"",
                x.value(st.tiers[i]));
        }
    };
    for (const Series& x : series) per_tier(x, "counter");
    for (const Series& x : gauges) per_tier(x, "gauge");
    for (const Series& x : usage_counters) per_tier(x, "counter");
    header(out, "lazyattn_kv_store_writes_pending", "gauge", "store writes queued or in progress");
    sample(out, "lazyattn_kv_store_writes_pending", model_label, double(st.writes_pending));
    header(out, "lazyattn_kv_store_pending_bytes", "gauge",
           "bytes of store writes queued or in progress (bounded by --kv-store-max-pending-mib)");
    sample(out, "lazyattn_kv_store_pending_bytes", model_label, double(st.bytes_pending));
    header(out, "lazyattn_kv_store_writes_dropped_total", "counter",
           "store writes dropped: the queue was full, or the entry too large, or left at shutdown");
    sample(out, "lazyattn_kv_store_writes_dropped_total", model_label, double(st.writes_dropped));
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

void Histogram::render(std::string& out, const std::string& name, const std::string& help,
                       const std::string& labels) const {
    header(out, name, "histogram", help);
    int64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cumulative += counts_[i];
        out += name + "_bucket{" + labels + ",le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += name + "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(count_) + "\n";
    out += name + "_sum{" + labels + "} " + number(sum_) + "\n";
    out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

// Bucket bounds as vLLM's (seconds).
Metrics::Metrics(std::string model_name)
    : model_label_("model_name=\"" + escape_label(model_name) + "\""),
      ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
             1,     2.5,   5,    7.5,  10,   20,   40,   80,  160,  640, 2560}),
      inter_token_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      queue_time_({0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}),
      e2e_({0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}) {}

std::string Metrics::route_label(const std::string& path) {
    static const char* kRoutes[] = {
        "/v1/completions", "/v1/chat/completions", "/v1/documents", "/v1/models", "/health", "/metrics",
        "/tokenize",       "/detokenize"};
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

void Metrics::record_request(const engine::RequestStats& stats, engine::FinishReason reason, double e2e_seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    generation_tokens_ += stats.num_generated;
    prompt_tokens_ += stats.num_prompt_tokens;
    cached_prompt_tokens_ += stats.reused_tokens;
    prompt_seconds_ += std::max(0.0, stats.ttft_ms - stats.queue_ms) / 1000.0;
    predicted_seconds_ += std::max(0.0, stats.decode_ms) / 1000.0;
    max_request_tokens_ = std::max<int64_t>(max_request_tokens_, stats.num_prompt_tokens + stats.num_generated);
    ++finished_[reason == engine::FinishReason::kCancelled ? "abort" : std::string(engine::finish_reason_name(reason))];
    if (!engine::finished_normally(reason)) return;
    ttft_.observe(stats.ttft_ms / 1000.0);
    queue_time_.observe(stats.queue_ms / 1000.0);
    e2e_.observe(e2e_seconds);
}

void Metrics::observe_inter_token(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    inter_token_.observe(seconds);
}

void Metrics::count_disconnect() {
    std::lock_guard<std::mutex> lock(mu_);
    ++disconnects_;
}

void Metrics::render_known(std::string& out, const KnownDocuments& known) const {
    header(out, "lazyattn_known_documents", "gauge", "documents in the known-document index, every tenant");
    sample(out, "lazyattn_known_documents", model_label_, double(known.num_documents()));
    header(out, "lazyattn_known_document_bytes", "gauge",
           "bytes the known-document index accounts (text, bookkeeping, each tenant's tables), every tenant");
    sample(out, "lazyattn_known_document_bytes", model_label_, double(known.num_bytes()));
}

std::string Metrics::render(const engine::SchedulerStats& s, const engine::EngineHealth& h) const {
    const std::string& m = model_label_;
    std::string out;
    auto scalar = [&](const std::string& name, const char* type, const std::string& help, double v) {
        header(out, name, type, help);
        sample(out, name, m, v);
    };
    std::lock_guard<std::mutex> lock(mu_);
    // vLLM's series.
    scalar("lazyattn_num_requests_running", "gauge", "requests admitted and holding KV", h.num_running);
    scalar("lazyattn_num_requests_waiting", "gauge", "requests waiting for admission", h.num_waiting);
    scalar("lazyattn_kv_cache_usage_perc", "gauge", "share of KV blocks referenced by requests, jobs or pins (0-1)",
           s.blocks_total > 0 ? double(s.blocks_used) / s.blocks_total : 0.0);
    scalar("lazyattn_prompt_tokens_total", "counter", "prompt tokens of generation requests the engine ended",
           double(prompt_tokens_));
    scalar("lazyattn_generation_tokens_total", "counter", "tokens generated", double(generation_tokens_));
    scalar("lazyattn_prefix_cache_queries_total", "counter", "prompt tokens looked up in the KV cache",
           double(prompt_tokens_));
    scalar("lazyattn_prefix_cache_hits_total", "counter",
           "prompt tokens served from the KV cache (documents and prefixes; the usage's cached_tokens)",
           double(cached_prompt_tokens_));
    scalar("lazyattn_num_preemptions_total", "counter", "requests preempted for KV blocks", double(s.preemptions));
    header(out, "lazyattn_request_success_total", "counter", "generation requests ended, by finish reason");
    for (const char* reason : {"stop", "length", "abort", "error"}) {
        auto it = finished_.find(reason);
        sample(out, "lazyattn_request_success_total", m + ",finished_reason=\"" + reason + "\"",
               double(it == finished_.end() ? 0 : it->second));
    }
    ttft_.render(out, "lazyattn_time_to_first_token_seconds", "submission to first generated token", m);
    inter_token_.render(out, "lazyattn_inter_token_latency_seconds", "time between two tokens of a request", m);
    queue_time_.render(out, "lazyattn_request_queue_time_seconds", "submission to admission", m);
    e2e_.render(out, "lazyattn_e2e_request_latency_seconds", "end-to-end latency of generation requests", m);
    // lazyattn's own: documents as cached segments.
    scalar("lazyattn_document_lookups_total", "counter", "document segments looked up in the cache",
           double(s.segment_hits + s.segment_misses));
    scalar("lazyattn_document_hits_total", "counter", "document segments found cached", double(s.segment_hits));
    scalar("lazyattn_document_misses_total", "counter", "document segments not cached", double(s.segment_misses));
    scalar("lazyattn_segment_jobs_total", "counter",
           "missing documents computed (a job shared by requests counts once)", double(s.segment_jobs));
    scalar("lazyattn_segment_job_tokens_total", "counter", "document tokens computed by segment jobs",
           double(s.segment_job_tokens));
    // Conditioned copies (document_reuse neighbours=K@ready, --quality balanced) and the
    // background work that makes them.
    scalar("lazyattn_conditioned_lookups_total", "counter",
           "documents looked up by requests that take their conditioned copy where it exists",
           double(s.conditioned_lookups));
    scalar("lazyattn_conditioned_served_total", "counter", "of those, served by the conditioned copy",
           double(s.conditioned_served));
    scalar("lazyattn_background_queued", "gauge", "conditioned copies waiting to be made in the background",
           double(s.background.queued + s.background.running));
    scalar("lazyattn_background_done_total", "counter", "conditioned copies made in the background",
           double(s.background.done));
    scalar("lazyattn_background_cancelled_total", "counter",
           "background jobs cancelled for a waiting request (made again later)", double(s.background.cancelled));
    scalar("lazyattn_background_refused_total", "counter",
           "conditioned copies not queued: a tenant's or the global cap was reached", double(s.background.refused));
    scalar("lazyattn_background_rows_total", "counter", "rows of background work computed", double(s.background_rows));
    scalar("lazyattn_engine_prefill_tokens_total", "counter",
           "prompt tokens the engine ran through the model (shared segment jobs once, recomputes included)",
           double(s.prompt_tokens_computed));
    scalar("lazyattn_engine_steps_total", "counter", "forward steps run", double(s.steps));
    scalar("lazyattn_kv_blocks_total", "gauge", "KV blocks in the pool", s.blocks_total);
    scalar("lazyattn_kv_blocks_used", "gauge", "KV blocks referenced by requests, jobs or pins", s.blocks_used);
    scalar("lazyattn_kv_blocks_pinned", "gauge", "KV blocks held by pinned documents", s.blocks_pinned);
    scalar("lazyattn_kv_blocks_cached", "gauge", "unreferenced KV blocks still holding reusable content",
           s.blocks_cached_free);
    scalar("lazyattn_kv_blocks_free", "gauge", "unreferenced KV blocks (cached ones included)", s.blocks_free);
    render_store(out, s.store, m);
    scalar("lazyattn_client_disconnects_total", "counter", "requests cancelled because the client went away",
           double(disconnects_));
    header(out, "lazyattn_http_requests_total", "counter", "HTTP requests answered, by route and status code");
    for (const auto& [key, n] : requests_) {
        sample(out, "lazyattn_http_requests_total",
               m + ",route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"", double(n));
    }
    render_llamacpp(out, s, h);
    return out;
}

void Metrics::render_llamacpp(std::string& out, const engine::SchedulerStats& s, const engine::EngineHealth& h) const {
    // Unlabelled, as llama-server writes them (its dashboards match the bare names). mu_ held.
    auto scalar = [&out](const std::string& name, const char* type, const char* help, double v) {
        header(out, name, type, help);
        out += name + " " + number(v) + "\n";
    };
    const int64_t processed = prompt_tokens_ - cached_prompt_tokens_;
    const int64_t decode_steps = s.decode_only.steps + s.mixed.steps;
    const int64_t decode_rows = s.decode_only.decode_rows + s.mixed.decode_rows;
    scalar("llamacpp:prompt_tokens_total", "counter", "prompt tokens computed (cached ones apart)", double(processed));
    scalar("llamacpp:prompt_tokens_cached_total", "counter", "prompt tokens served from the KV cache",
           double(cached_prompt_tokens_));
    scalar("llamacpp:prompt_seconds_total", "counter", "prompt time of ended requests (admission to first token)",
           prompt_seconds_);
    scalar("llamacpp:tokens_predicted_total", "counter", "tokens generated", double(generation_tokens_));
    scalar("llamacpp:tokens_predicted_seconds_total", "counter", "decode time of ended requests", predicted_seconds_);
    scalar("llamacpp:n_decode_total", "counter", "forward steps run", double(s.steps));
    scalar("llamacpp:n_tokens_max", "counter", "the most tokens (prompt and generated) one request held",
           double(max_request_tokens_));
    for (const char* name :
         {"llamacpp:spec_decode_num_draft_tokens_total", "llamacpp:spec_decode_num_accepted_tokens_total",
          "llamacpp:spec_decode_num_drafts_total"}) {
        scalar(name, "counter", "speculative decoding is not served: always 0", 0);
    }
    scalar("llamacpp:prompt_tokens_seconds", "gauge", "prompt tokens computed per prompt second",
           prompt_seconds_ > 0 ? double(processed) / prompt_seconds_ : 0.0);
    scalar("llamacpp:predicted_tokens_seconds", "gauge", "tokens generated per decode second",
           predicted_seconds_ > 0 ? double(generation_tokens_) / predicted_seconds_ : 0.0);
    scalar("llamacpp:requests_processing", "gauge", "requests running", h.num_running);
    scalar("llamacpp:requests_deferred", "gauge", "requests waiting for admission", h.num_waiting);
    scalar("llamacpp:n_busy_slots_per_decode", "gauge", "requests decoding per decode step, on average",
           decode_steps > 0 ? double(decode_rows) / double(decode_steps) : 0.0);
}

}  // namespace lazyattn::server
