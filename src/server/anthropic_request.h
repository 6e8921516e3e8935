// Anthropic Messages request bodies (POST /v1/messages, /v1/messages/count_tokens) -> the
// GenerationRequest every API hands the serving front. What is served: `model`, `max_tokens`,
// `messages` (user and assistant turns; content a string or a list of blocks), `system`,
// `stop_sequences`, `temperature`, `top_p`, `top_k`, `stream`, `metadata`; a final assistant
// message is a prefill the answer continues (continue_final_message). A `document` block
// becomes a cached document (GenerationRequest::documents, in the order the blocks come, its
// title kept), laid out exactly as a chat completion's `documents` entry, so the same documents
// are cache hits whichever API and order brings them. `cache_control` is accepted on any block
// (lazyattn caches every document and prompt prefix by itself); `citations` is accepted and not
// produced. lazyattn's extensions are read as chat completions reads them: `documents`,
// `cache_salt`, `document_reuse`, `documents_from`, `document_delimiter`, `seed`. Client tools:
// `tools` (name, description, input_schema), `tool_choice` (auto, any, tool, none;
// disable_parallel_tool_use), assistant `tool_use` blocks and user `tool_result` blocks (each a
// tool message), onto server/tool_calls/ as chat completions' tools.
//
// Refused with a 400 naming the field (never silently dropped): image blocks, PDF / URL / file
// document sources, server tools and MCP blocks, extended
// thinking, structured output, and any top-level field the API does not define (as Anthropic
// refuses them), so that a feature the client relies on is never quietly missing.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace lazyattn::server {

// Which route reads the body: count_tokens takes the same body without `max_tokens` and without
// generation settings being required.
enum class AnthropicRoute { kMessages, kCountTokens };

// `body` is the parsed JSON of the request; text must be valid UTF-8. On error, `out` may be
// partly filled and must not be used.
std::optional<ApiError> parse_anthropic_request(const nlohmann::json& body, AnthropicRoute route,
                                                GenerationRequest& out);

// Anthropic's error body: {"type": "error", "error": {"type", "message"}} (the field it names
// and lazyattn's code ride along as "param" and "code", which Anthropic's clients ignore).
std::string anthropic_error_json(const ApiError& e);
// Anthropic's name for an error of this HTTP status (invalid_request_error, authentication_error,
// permission_error, not_found_error, request_too_large, rate_limit_error, overloaded_error,
// api_error).
const char* anthropic_error_type(int http_status);

}  // namespace lazyattn::server
