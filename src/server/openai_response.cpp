#include "server/openai_response.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json usage_json(const engine::RequestStats& s) {
    return {{"prompt_tokens", s.num_prompt_tokens},
            {"completion_tokens", s.num_generated},
            {"total_tokens", s.num_prompt_tokens + s.num_generated},
            // Extensions: document_tokens (prompt tokens in document segments), so that a client can
            // tell how much of its documents the cache served; computed_tokens (prompt tokens that
            // ran, every choice's, recomputed document rows included: what the request cost) and of
            // those recomputed_tokens (document_reuse.recompute rows, once per choice).
            {"prompt_tokens_details",
             {{"cached_tokens", s.reused_tokens},
              {"document_tokens", s.document_tokens},
              {"computed_tokens", s.prefill_tokens},
              {"recomputed_tokens", s.recomputed_tokens}}}};
}

json envelope(const ResponseMeta& meta, const char* object) {
    return {{"id", meta.id},
            {"object", object},
            {"created", meta.created},
            {"model", meta.model},
            {"system_fingerprint", meta.fingerprint.empty() ? json(nullptr) : json(meta.fingerprint)}};
}

json reason_json(const std::string& reason) { return reason.empty() ? json(nullptr) : json(reason); }

}  // namespace

ResponseMeta make_response_meta(bool chat, const std::string& model, const std::string& fingerprint) {
    thread_local std::mt19937_64 rng(std::random_device{}());
    char hex[25];
    std::snprintf(hex, sizeof hex, "%016llx%08llx", (unsigned long long)rng(),
                  (unsigned long long)(rng() & 0xffffffffu));
    ResponseMeta m;
    m.id = std::string(chat ? "chatcmpl-" : "cmpl-") + hex;
    m.created =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    m.model = model;
    m.fingerprint = fingerprint;
    m.chat = chat;
    return m;
}

std::string completion_body(const ResponseMeta& meta, const std::vector<ChoiceBody>& choices,
                            const engine::RequestStats& usage) {
    json body = envelope(meta, meta.chat ? "chat.completion" : "text_completion");
    json list = json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
        const ChoiceBody& c = choices[i];
        json choice = {{"index", int(i)}, {"logprobs", c.logprobs}, {"finish_reason", reason_json(c.finish_reason)}};
        if (meta.chat) {
            choice["message"] = {{"role", "assistant"}, {"content", c.content_null ? json(nullptr) : json(c.text)}};
            if (c.reasoning) choice["message"]["reasoning_content"] = *c.reasoning;
            if (!c.tool_calls.is_null()) choice["message"]["tool_calls"] = c.tool_calls;
        } else {
            choice["text"] = c.text;
        }
        list.push_back(std::move(choice));
    }
    body["choices"] = std::move(list);
    body["usage"] = usage_json(usage);
    return dump(body);
}

std::string chunk_body(const ResponseMeta& meta, int index, const std::string& text, bool role,
                       const std::string& finish_reason, bool with_usage_null, const json& logprobs,
                       const std::string& reasoning) {
    json body = envelope(meta, meta.chat ? "chat.completion.chunk" : "text_completion");
    json choice = {{"index", index}, {"logprobs", logprobs}, {"finish_reason", reason_json(finish_reason)}};
    if (meta.chat) {
        json delta = json::object();
        // The first chunk names the role; its content is null unless it carries text (OpenAI and
        // llama-server both send null there, and clients that concatenate skip it).
        if (role) delta["role"] = "assistant";
        if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
        if (!text.empty()) {
            delta["content"] = text;
        } else if (role && reasoning.empty()) {
            delta["content"] = nullptr;
        }
        choice["delta"] = delta;
    } else {
        choice["text"] = text;
    }
    body["choices"] = json::array({choice});
    if (with_usage_null) body["usage"] = nullptr;
    return dump(body);
}

std::string tool_call_chunk_body(const ResponseMeta& meta, int index, const json& tool_call, bool with_usage_null) {
    json body = envelope(meta, "chat.completion.chunk");
    json choice = {{"index", index},
                   {"logprobs", nullptr},
                   {"finish_reason", nullptr},
                   {"delta", {{"tool_calls", json::array({tool_call})}}}};
    body["choices"] = json::array({choice});
    if (with_usage_null) body["usage"] = nullptr;
    return dump(body);
}

std::string usage_chunk_body(const ResponseMeta& meta, const engine::RequestStats& stats) {
    json body = envelope(meta, meta.chat ? "chat.completion.chunk" : "text_completion");
    body["choices"] = json::array();
    body["usage"] = usage_json(stats);
    return dump(body);
}

}  // namespace lazyattn::server
