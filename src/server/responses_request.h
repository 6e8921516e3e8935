// OpenAI Responses request bodies (POST /v1/responses) -> the GenerationRequest every API hands
// the serving front. `input` (a string, or a list of message items with text parts) and
// `instructions` (a system message first) become chat messages; max_output_tokens, temperature,
// top_p, stream and lazyattn's chat extensions (documents, cache_salt, document_reuse,
// documents_from, document_delimiter, stop, seed, top_k, ...) are checked by the chat parser
// itself (parse_generation_request), so a field means and is bounded the same in both APIs;
// its errors name this API's fields (max_output_tokens, input).
//
// text.format json_object / json_schema is chat's response_format (structured output). Refused
// with a 400 naming the field, never silently dropped: images, files and audio parts; tool calls
// and tools; reasoning
// effort; logprobs; conversation and item references (only whole responses are kept, by id);
// background. previous_response_id continues a kept response's conversation (its input turns and
// its answer come before the new input; its instructions do not carry over, as OpenAI's). Accepted
// as no-ops: metadata (checked as OpenAI bounds it), truncation, include (except logprobs),
// parallel_tool_calls, service_tier, user, ...
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/chat_template.h"

namespace lazyattn::server {

// What a response object repeats of its request (OpenAI echoes the settings it ran with).
struct ResponsesEcho {
    std::optional<std::string> instructions;
    std::optional<int64_t> max_output_tokens;
    double temperature = 1.0;
    double top_p = 1.0;
    nlohmann::json metadata = nlohmann::json::object();
    bool store = true;
    std::string truncation = "disabled";
    std::optional<std::string> user;
    std::optional<std::string> previous_response_id;
    nlohmann::json text_format = {{"type", "text"}};
};

struct ResponsesRequest {
    GenerationRequest gen;  // chat: instructions, the previous response's turns, the input
    ResponsesEcho echo;
    size_t instruction_messages = 0;  // gen.messages that are `instructions` (0 or 1)
};

// The conversation of a kept response (previous_response_id), or nullopt when none has that id.
using PreviousResponseLookup = std::function<std::optional<std::vector<tokenizer::ChatMessage>>(const std::string&)>;

// metadata as OpenAI bounds it: at most 16 pairs, keys up to 64 characters, values strings up to
// 512.
inline constexpr size_t kMaxMetadataPairs = 16;
inline constexpr size_t kMaxMetadataKeyChars = 64;
inline constexpr size_t kMaxMetadataValueChars = 512;

// Reads `body` (consumed: long strings are moved out of it, not copied). On error, the ApiError
// names the Responses field ("input[2].content[0]", "max_output_tokens", ...).
// previous_response_id is looked up with `previous` (none: every id is unknown).
std::optional<ApiError> parse_responses_request(nlohmann::json& body, ResponsesRequest& out,
                                                const PreviousResponseLookup& previous = {});

// An error from the chat parser or the serving front in this API's field names: "max_tokens" is
// "max_output_tokens", "messages" is "input".
ApiError responses_field_names(ApiError e);

}  // namespace lazyattn::server
