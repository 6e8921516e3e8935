// The server's sampling defaults (llama-server's --temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --seed): what a request that does not set a field samples with. A field
// the request sets wins; a field neither sets keeps the API's own default. They are written
// into the request body before its API's parser reads it, so every API checks a default by the
// same rules as a value a client sent, under its own field names.
//
// A seed: llama-server gives every request without one the server's --seed (so two equal
// requests sample the same tokens); -1 (its default) leaves each such request a random seed.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "core/status.h"

namespace lazyattn::server {

struct SamplingDefaults {
    std::optional<double> temperature;     // [0, 2]; llama-server's negative temperature: 0 (greedy)
    std::optional<double> top_p;           // [0, 1]
    std::optional<double> min_p;           // [0, 1]
    std::optional<int64_t> top_k;          // >= 0 (0: off)
    std::optional<double> repeat_penalty;  // (0, 100]
    std::optional<uint64_t> seed;          // unset: a random seed per request

    bool empty() const { return !temperature && !top_p && !min_p && !top_k && !repeat_penalty && !seed; }
    // The ranges the request parsers accept (a start-up error names the flag).
    Status validate() const;
    // "temperature 0, seed 42": what the start-up line reports.
    std::string describe() const;
};

// The APIs whose bodies carry sampling fields, each under its own names and ranges.
enum class SamplingApi {
    kOpenAI,     // /v1/completions, /v1/chat/completions: repetition_penalty
    kNative,     // llama-server's /completion: repeat_penalty
    kAnthropic,  // /v1/messages: temperature in [0, 1], no min_p or penalty fields
    kResponses,  // /v1/responses: no penalty field
};

// Sets in `body` (a JSON object) each default the request leaves out (absent or null). A default
// outside the API's range (an Anthropic temperature above 1) is not applied there.
void apply_sampling_defaults(const SamplingDefaults& defaults, SamplingApi api, nlohmann::json& body);

}  // namespace lazyattn::server
