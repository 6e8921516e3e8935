#include "server/llama_telemetry.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

double per_token(double ms, int64_t n) { return n > 0 ? ms / double(n) : 0.0; }
double per_second(double ms, int64_t n) { return n > 0 && ms > 0 ? 1000.0 * double(n) / ms : 0.0; }

}  // namespace

json llama_timings(int64_t cached, int64_t computed, double prompt_ms, int64_t predicted, double predicted_ms) {
    const int64_t decode_steps = std::max<int64_t>(0, predicted - 1);
    return {{"cache_n", cached},
            {"prompt_n", computed},
            {"prompt_ms", prompt_ms},
            {"prompt_per_token_ms", per_token(prompt_ms, computed)},
            {"prompt_per_second", per_second(prompt_ms, computed)},
            {"predicted_n", predicted},
            {"predicted_ms", predicted_ms},
            {"predicted_per_token_ms", per_token(predicted_ms, decode_steps)},
            {"predicted_per_second", per_second(predicted_ms, decode_steps)}};
}

json llama_timings(const engine::RequestStats& st) {
    const int64_t cached = st.reused_tokens;
    const int64_t computed = std::max<int64_t>(0, int64_t(st.num_prompt_tokens) - cached);
    return llama_timings(cached, computed, std::max(0.0, st.ttft_ms - st.queue_ms), st.num_generated, st.decode_ms);
}

json llama_timings(const engine::EventTimings& t) {
    return llama_timings(t.cached, std::max(0, t.processed - t.cached), t.prompt_ms, t.generated, t.decode_ms);
}

json prompt_progress_json(const engine::EventTimings& t) {
    return {{"total", t.prompt_tokens}, {"cache", t.cached}, {"processed", t.processed}, {"time_ms", t.prompt_ms}};
}

std::string with_fields(const std::string& body, const json& fields) {
    json j = json::parse(body, nullptr, false);
    if (!j.is_object()) return body;  // never: the shape functions write objects
    for (const auto& [key, value] : fields.items()) j[key] = value;
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void set_event_fields(std::string& out, size_t from, const json& fields, bool last_only) {
    static constexpr std::string_view kData = "data: {";
    static constexpr std::string_view kEnd = "\n\n";
    std::vector<std::pair<size_t, size_t>> events;  // [begin, end) of each JSON payload
    for (size_t at = from; at < out.size();) {
        size_t end = out.find(kEnd, at);
        if (end == std::string::npos) end = out.size();
        if (out.compare(at, kData.size(), kData) == 0) events.push_back({at + kData.size() - 1, end});
        at = end + kEnd.size();
    }
    if (last_only && events.size() > 1) events.erase(events.begin(), events.end() - 1);
    for (auto it = events.rbegin(); it != events.rend(); ++it) {  // back to front: offsets hold
        const auto [begin, end] = *it;
        out.replace(begin, end - begin, with_fields(out.substr(begin, end - begin), fields));
    }
}

}  // namespace lazyattn::server
