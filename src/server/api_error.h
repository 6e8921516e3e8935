// ApiError: an error as an OpenAI-compatible API reports it, {"error": {"message", "type",
// "param", "code"}} with an HTTP status. Engine Status codes map onto it in one place, so every
// route answers the same failure the same way.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "core/utf8.h"

namespace lazyattn::server {

// A client's string quoted in an error: text::clip_for_message (its first 64 bytes and its length).
using text::clip_for_message;

struct ApiError {
    int http_status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // "" is written as null
    std::string code;   // "" is written as null
    // A prompt past the context: its sizes, written as llama-server's n_prompt_tokens and n_ctx
    // (-1: not such an error).
    int64_t n_prompt_tokens = -1;
    int64_t n_ctx = -1;

    std::string to_json() const;
};

// 400 invalid_request_error naming the offending field.
ApiError invalid_request(std::string message, std::string param = {}, std::string code = {});

// The HTTP face of an engine Status:
//   kInvalidArgument, kUnsupported -> 400; kOutOfRange -> 400 context_length_exceeded;
//   kResourceExhausted -> 429 (queue full; the caller adds Retry-After) or 400 when the request
//   can never fit the KV pool; kNotFound -> 404; kCancelled -> 503; anything else -> 500.
ApiError api_error_from_status(const Status& status);

// A completion that failed, streamed or not: api_error_from_status, except that kNotFound (only
// the request builder answers it: a document id that is not cached) is a 400 on "documents", and a
// context overflow names the field it comes from ("messages" for chat, else "prompt").
ApiError generation_error(const Status& status, bool chat);
// A completion cancelled because the server is shutting down.
ApiError cancelled_generation_error();

}  // namespace lazyattn::server
