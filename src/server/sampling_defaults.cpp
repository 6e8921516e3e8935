#include "server/sampling_defaults.h"

#include <nlohmann/json.hpp>

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

bool left_out(const json& body, const char* key) { return !body.contains(key) || body.at(key).is_null(); }

template <typename T>
void set_if_left_out(json& body, const char* key, const std::optional<T>& value) {
    if (value && left_out(body, key)) body[key] = *value;
}

std::string number_text(double v) { return json(v).dump(); }

}  // namespace

Status SamplingDefaults::validate() const {
    if (temperature && !(*temperature >= 0 && *temperature <= 2)) return invalid_argument("--temp must be in [0, 2]");
    if (top_p && !(*top_p >= 0 && *top_p <= 1)) return invalid_argument("--top-p must be in [0, 1]");
    if (min_p && !(*min_p >= 0 && *min_p <= 1)) return invalid_argument("--min-p must be in [0, 1]");
    if (top_k && (*top_k < 0 || *top_k > INT32_MAX)) return invalid_argument("--top-k must be >= 0 (0: off)");
    if (repeat_penalty && !(*repeat_penalty > 0 && *repeat_penalty <= 100)) {
        return invalid_argument("--repeat-penalty must be in (0, 100]");
    }
    return {};
}

std::string SamplingDefaults::describe() const {
    std::string out;
    auto add = [&out](const char* name, const std::string& v) {
        out += (out.empty() ? "" : ", ") + (name + (" " + v));
    };
    if (temperature) add("temperature", number_text(*temperature));
    if (top_k) add("top_k", std::to_string(*top_k));
    if (top_p) add("top_p", number_text(*top_p));
    if (min_p) add("min_p", number_text(*min_p));
    if (repeat_penalty) add("repeat_penalty", number_text(*repeat_penalty));
    if (seed) add("seed", std::to_string(*seed));
    return out;
}

void apply_sampling_defaults(const SamplingDefaults& d, SamplingApi api, json& body) {
    if (d.empty() || !body.is_object()) return;  // a body that is not an object is refused by its parser
    const bool anthropic = api == SamplingApi::kAnthropic;
    if (d.temperature && (!anthropic || *d.temperature <= 1)) set_if_left_out(body, "temperature", d.temperature);
    set_if_left_out(body, "top_p", d.top_p);
    set_if_left_out(body, "top_k", d.top_k);
    set_if_left_out(body, "seed", d.seed);
    if (anthropic) return;  // the Messages API has no min_p or penalty fields (its parser refuses them)
    set_if_left_out(body, "min_p", d.min_p);
    if (api == SamplingApi::kNative) {
        // llama-server's name; a body that names either spelling keeps its own value.
        if (left_out(body, "repetition_penalty")) set_if_left_out(body, "repeat_penalty", d.repeat_penalty);
    } else {
        set_if_left_out(body, "repetition_penalty", d.repeat_penalty);
    }
}

}  // namespace lazyattn::server
