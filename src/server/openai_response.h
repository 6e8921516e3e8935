// Native results -> OpenAI response bodies: whole completions (text_completion, chat.completion),
// stream chunks (text_completion / chat.completion.chunk) and the usage object, whose
// prompt_tokens_details.cached_tokens reports the prompt tokens served from the KV cache.
#pragma once

#include <cstdint>
#include <string>

#include "engine/rag_request.h"

namespace lazyattn::server {

struct ResponseMeta {
    std::string id;       // "cmpl-..." or "chatcmpl-..."
    int64_t created = 0;  // unix seconds
    std::string model;
    bool chat = false;
};

// A fresh response id for a completion (chat: "chatcmpl-", else "cmpl-") and the current time.
ResponseMeta make_response_meta(bool chat, const std::string& model);

// "stop" and "length" pass through; the engine's "cancelled" and "error" never reach a client as
// a finish_reason (the routes turn them into errors).
std::string completion_body(const ResponseMeta& meta, const engine::RagResult& result);

// One stream chunk. Chat: with `role`, the delta opens with {"role": "assistant"}; with a
// finish_reason, the delta is empty and the reason is set. with_usage_null adds "usage": null
// (OpenAI does so on every chunk when stream_options.include_usage is set).
std::string chunk_body(const ResponseMeta& meta, const std::string& text, bool role, const std::string& finish_reason,
                       bool with_usage_null);
// The last chunk of an include_usage stream: empty choices, the usage object.
std::string usage_chunk_body(const ResponseMeta& meta, const engine::RequestStats& stats);

}  // namespace lazyattn::server
