// Native results -> OpenAI response bodies: whole completions (text_completion, chat.completion)
// with one or more choices, stream chunks (text_completion / chat.completion.chunk) and the
// usage object, whose prompt_tokens_details.cached_tokens reports the prompt tokens served from
// the KV cache. Logprobs objects come ready-made (logprobs_json.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request/rag_request.h"

namespace lazyattn::server {

struct ResponseMeta {
    std::string id;       // "cmpl-..." or "chatcmpl-..."
    int64_t created = 0;  // unix seconds
    std::string model;
    std::string fingerprint;  // system_fingerprint ("": null)
    bool chat = false;
};

// A fresh response id for a completion (chat: "chatcmpl-", else "cmpl-") and the current time.
ResponseMeta make_response_meta(bool chat, const std::string& model, const std::string& fingerprint = "");

// One choice of a whole response. "stop" and "length" pass through as finish_reason; the
// engine's "cancelled" and "error" never reach a client as one (the routes turn them into errors).
struct ChoiceBody {
    std::string text;  // completions with echo: the prompt, then the completion
    std::string finish_reason;
    nlohmann::json logprobs;  // null when not asked for
    // Chat: the reply's thoughts (server/reasoning_split.h), written as message.reasoning_content
    // when the reply had a <think> section; text is then the answer.
    std::optional<std::string> reasoning;
    // Chat with tools (server/tool_calls/): the calls parsed from the reply, written as
    // message.tool_calls (null: none); content_null writes message.content as null.
    nlohmann::json tool_calls;
    bool content_null = false;
};

std::string completion_body(const ResponseMeta& meta, const std::vector<ChoiceBody>& choices,
                            const engine::RequestStats& usage);

// One stream chunk for choice `index`. Chat: with `role`, the delta opens with {"role":
// "assistant"}; with a finish_reason, the delta is empty and the reason is set. with_usage_null
// adds "usage": null (OpenAI does so on every chunk when stream_options.include_usage is set).
// `reasoning` (chat): thought text, sent as delta.reasoning_content.
std::string chunk_body(const ResponseMeta& meta, int index, const std::string& text, bool role,
                       const std::string& finish_reason, bool with_usage_null, const nlohmann::json& logprobs = nullptr,
                       const std::string& reasoning = "");
// A chat chunk whose delta carries one tool_calls entry (tool_call_parser.h's deltas).
std::string tool_call_chunk_body(const ResponseMeta& meta, int index, const nlohmann::json& tool_call,
                                 bool with_usage_null);
// The last chunk of an include_usage stream: empty choices, the usage object.
std::string usage_chunk_body(const ResponseMeta& meta, const engine::RequestStats& stats);

}  // namespace lazyattn::server
