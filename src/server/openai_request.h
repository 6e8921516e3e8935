// OpenAI request bodies -> native structs. parse_generation_request() reads a /v1/completions or
// /v1/chat/completions body, checks every field's type and range, and answers either a
// GenerationRequest (no JSON left in it) or the ApiError naming the offending field. Unknown
// fields are ignored, as OpenAI-compatible servers do; fields lazyattn cannot honour (best_of,
// suffix, tools in a completion) are refused rather than silently dropped. Chat takes tools,
// tool_choice and parallel_tool_calls (server/tool_calls/), assistant messages with tool_calls
// and `tool` messages with tool_call_id. `n` choices (up to kMaxChoices) run
// as one group that shares its recomputed rows (engine::RagRequest::choice_group).
//
// Chat template fields (llama-server's and vLLM's): `add_generation_prompt`,
// `continue_final_message`, `chat_template_kwargs` (tokenizer/chat_template_kwargs.h) and
// `reasoning_format`; a completion ignores them, as llama-server does.
//
// Extensions: `cache_salt` (vLLM's: requests share cached KV only with the same salt),
// `documents` (strings, or {"text", "title"?} objects, or {"id"} naming a cached
// document), `documents_from` ("parts", "delimiter", "none", or {"source", "message",
// "delimiter"}) and `document_delimiter` (documents inside a message: server/message_documents.h), `document_reuse` (how the question reads cached documents: "anchor+bias=-1" or
// {"anchored", "logit_scale", "logit_bias"}; engine::DocumentReuse), `top_k`, `min_p`,
// `repetition_penalty`, `ignore_eos`. `logit_bias` follows OpenAI (bounded: kMaxLogitBias).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request/document_reuse.h"
#include "engine/request/sampling_params.h"
#include "server/api_error.h"
#include "server/message_documents.h"
#include "server/reasoning_split.h"
#include "server/tool_calls/tool_definitions.h"
#include "template/value.h"
#include "tokenizer/chat_template.h"

namespace lazyattn::server {

// One entry of `documents`: text (with an optional title), the document's token ids as the
// segment itself (no formatting applied), or the id of a cached document.
struct DocumentRef {
    std::string text;
    std::string title;
    std::vector<int32_t> tokens;  // set (and text empty) for a document given as token ids
    std::string id;               // set (and text, tokens empty) for a reference to a cached document
    bool by_id() const { return text.empty() && tokens.empty() && !id.empty(); }
};

struct GenerationRequest {
    bool chat = false;
    std::string model;                             // "" when the body named none
    std::string prompt;                            // completions: text prompt
    std::vector<int32_t> prompt_tokens;            // completions: prompt given as token ids
    std::vector<tokenizer::ChatMessage> messages;  // chat
    // Per message, its text parts when its content was a list (empty for a string content).
    std::vector<std::vector<ContentPart>> message_parts;
    std::vector<DocumentRef> documents;
    engine::SamplingParams sampling;
    bool seed_given = false;
    int32_t max_tokens = -1;  // -1: not given (the route picks the default); 0 only with echo
    int32_t n = 1;            // choices: n requests sharing the prompt's cached blocks
    // Logprobs of generated tokens with this many alternatives (-1: none). Completions: `logprobs`
    // (an integer); chat: `logprobs: true` with `top_logprobs`.
    int32_t logprobs = -1;
    bool echo = false;  // completions: the prompt is returned before the completion (with
                        // its tokens' logprobs when logprobs >= 0)
    std::vector<std::string> stop;
    bool ignore_eos = false;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    // llama-server's telemetry: `timings` on every streamed chunk (timings_per_token) and
    // prompt_progress chunks while a streamed prompt runs (return_progress); `verbose`: the
    // __verbose object (the rendered prompt, ...) asked for or refused (unset: --verbose says).
    bool timings_per_token = false;
    bool return_progress = false;
    std::optional<bool> verbose;
    std::string cache_salt;                               // isolates the request's cache entries (as vLLM's cache_salt)
    std::optional<engine::DocumentReuse> document_reuse;  // not given: the server's default
    // Documents inside messages (`documents_from`, `document_delimiter`); each not given: the
    // server's setting (ServerConfig::documents_from).
    std::optional<DocumentsSource> documents_source;
    std::optional<std::pair<DocumentsFrom::Message, int32_t>> documents_message;
    std::shared_ptr<const Delimiter> document_delimiter;
    std::optional<bool> documents_known;  // documents_from "known" (or "…+known", {"known": true})
    // Chat template fields (chat only; llama-server's and vLLM's spellings): each unset when the
    // body did not say. add_generation_prompt: opens the assistant's turn (default true).
    // continue_final_message: the last message is continued, not closed (true, or "content");
    // unset, a final assistant message is continued all the same (llama-server's assistant
    // prefill). chat_template_kwargs: extra template variables (a dict; undefined when none).
    std::optional<bool> add_generation_prompt;
    std::optional<bool> continue_final_message;
    tmpl::Value chat_template_kwargs;
    // How the reply's <think> section is returned (server/reasoning_split.h); unset: the
    // server's --reasoning-format.
    std::optional<ReasoningFormat> reasoning_format;
    // Structured output (server/constraint_request.h): what the output must match; compiled by
    // ServingFront::prepare into sampling.constraint.
    std::optional<grammar::ConstraintSpec> constraint;
    // Tool calls (server/tool_calls/): the tools offered and how the model may call (null: none).
    // ServingFront::prepare sets their family and, for a template that reads `tools`,
    // template_tools (the template's `tools` variable).
    std::shared_ptr<const tool_calls::ToolRequest> tools;
    tmpl::Value template_tools;
};

// Longest cache_salt accepted (it only names a namespace).
inline constexpr size_t kMaxCacheSaltBytes = 256;
// The most choices one request may ask for (each is a generation of its own).
inline constexpr int32_t kMaxChoices = 16;
// Stop strings of one request: how many, and their bytes together (shared by its choices).
inline constexpr int32_t kMaxStopStrings = 16;
inline constexpr int32_t kMaxStopBytes = 4096;
// Tokens one request's logit_bias may name.
inline constexpr int32_t kMaxLogitBias = 1024;

// `body` is the parsed JSON of the request. Text fields must be valid UTF-8.
std::optional<ApiError> parse_generation_request(const nlohmann::json& body, bool chat, GenerationRequest& out);

// The optional `cache_salt` string of a body (at most kMaxCacheSaltBytes).
std::optional<ApiError> parse_cache_salt(const nlohmann::json& body, std::string& out);
// The same rules for a salt from elsewhere (the query string of the document routes).
std::optional<ApiError> check_cache_salt(const std::string& salt);

// A list of token ids (each in [0, vocab_size)); `param` names the field in errors.
std::optional<ApiError> parse_token_ids(const nlohmann::json& value, const std::string& param, int32_t vocab_size,
                                        std::vector<int32_t>& out);

// `documents` as POST /v1/documents and the generation requests take it (entries by id refused
// when allow_ids is false).
std::optional<ApiError> parse_documents(const nlohmann::json& value, bool allow_ids, std::vector<DocumentRef>& out);

}  // namespace lazyattn::server
