// llama-server's telemetry in replies, one spelling for every API that carries it:
// - `timings` {cache_n, prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second, predicted_n,
//   predicted_ms, predicted_per_token_ms, predicted_per_second}: on every streamed chunk when the
//   request sets timings_per_token (from the event's own engine::EventTimings), and with the end;
// - `prompt_progress` {total, cache, processed, time_ms}: the chunks a streamed request with
//   return_progress gets while its prompt runs (engine kProgress events: output/prefill_progress.h).
// prompt_ms runs from admission to the first token (or to the event while the prompt runs);
// predicted_ms from the first token to the last (or to the event). The decode rate is over the
// n-1 steps after the first token, whose logits came from the prompt's last row (0 for one
// token), as llama-server's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/request/rag_request.h"
#include "engine/request/request_handle.h"

namespace lazyattn::server {

// `timings` from its four measures: tokens served by the cache and computed, the prompt's time,
// tokens generated and the time from the first to the last.
nlohmann::json llama_timings(int64_t cached, int64_t computed, double prompt_ms, int64_t predicted,
                             double predicted_ms);
// `timings` of a finished request.
nlohmann::json llama_timings(const engine::RequestStats& stats);
// `timings` where an event says the request stood.
nlohmann::json llama_timings(const engine::EventTimings& t);
// `prompt_progress` of a kProgress event.
nlohmann::json prompt_progress_json(const engine::EventTimings& t);

// `body` (a serialized JSON object, as a shape function wrote it) with `fields` set in it.
std::string with_fields(const std::string& body, const nlohmann::json& fields);
// The unnamed SSE events `out` holds from byte `from` on (sse_event's "data: {...}\n\n", each
// one JSON object on one line) with `fields` set in each, or in the last one only. Anything else
// (a [DONE], a comment) is left as it is.
void set_event_fields(std::string& out, size_t from, const nlohmann::json& fields, bool last_only = false);

// What one streamed choice reports: the timings of its latest event that had them.
struct StreamTimings {
    bool any = false;
    engine::EventTimings latest;
    // Keeps e's timings when it has them (a token or progress event; held-back text has none).
    void note(const engine::RequestEvent& e) {
        if (e.kind == engine::RequestEvent::Kind::kFinished || e.timings.prompt_tokens == 0) return;
        latest = e.timings;
        any = true;
    }
};

}  // namespace lazyattn::server
