// FinishReason: why a request stopped generating, one name for the engine and every API. "stop"
// and "length" reach clients as they are (each API spells them its own way: Anthropic's
// "end_turn" / "max_tokens", llama-server's stop_type); "cancelled" and "error" never do: the
// routes turn them into errors.
#pragma once

#include <cstdint>
#include <string_view>

namespace lazyattn::engine {

enum class FinishReason : uint8_t {
    kNone,       // not finished (an event that is not the last)
    kStop,       // an end-of-generation token or a stop string
    kLength,     // max_tokens reached, or the context is full
    kCancelled,  // the caller cancelled it, or the engine shut down
    kError,      // the engine failed it: RagResult::status says why
};

// "stop", "length", "cancelled", "error" ("" for kNone): OpenAI's spelling and the metrics label.
constexpr std::string_view finish_reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::kStop:
            return "stop";
        case FinishReason::kLength:
            return "length";
        case FinishReason::kCancelled:
            return "cancelled";
        case FinishReason::kError:
            return "error";
        case FinishReason::kNone:
            break;
    }
    return "";
}

// True for the reasons a client sees as a normal end (stop, length).
constexpr bool finished_normally(FinishReason r) { return r == FinishReason::kStop || r == FinishReason::kLength; }

}  // namespace lazyattn::engine
