// The one refusal of a prompt that leaves no room in the context: written by the engine's check
// (Scheduler::validate) and the server's early one (RequestBuilder), read back by the server's
// error body, which carries the sizes as fields (llama-server's n_prompt_tokens and n_ctx).
#pragma once

#include <cstdint>
#include <optional>

#include "core/status.h"

namespace lazyattn::engine {

struct ContextOverflow {
    int64_t prompt_tokens = 0;  // documents and question
    int64_t context_length = 0;
};

// kOutOfRange naming both sizes.
Status context_overflow(const ContextOverflow& sizes);
// The sizes of a context_overflow() status; nullopt for any other.
std::optional<ContextOverflow> parse_context_overflow(const Status& st);

}  // namespace lazyattn::engine
