#include "server/anthropic_renderer.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/request/request_handle.h"
#include "server/anthropic_request.h"
#include "server/serving_front.h"
#include "server/sse.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string event(const char* name, const json& payload) { return sse_named_event(name, dump(payload)); }

json stop_sequence_json(engine::FinishReason reason, const std::string& stop_word) {
    if (reason != engine::FinishReason::kStop || stop_word.empty()) return nullptr;
    return stop_word;
}

}  // namespace

std::string make_message_id() {
    thread_local std::mt19937_64 rng(std::random_device{}());
    char hex[25];
    std::snprintf(hex, sizeof hex, "%016llx%08llx", (unsigned long long)rng(),
                  (unsigned long long)(rng() & 0xffffffffu));
    return std::string("msg_") + hex;
}

const char* anthropic_stop_reason(engine::FinishReason reason, const std::string& stop_word) {
    if (reason == engine::FinishReason::kLength) return "max_tokens";
    return stop_word.empty() ? "end_turn" : "stop_sequence";
}

json anthropic_usage(const engine::RequestStats& s) {
    const int64_t prompt = std::max(0, s.num_prompt_tokens);
    const int64_t read = std::clamp<int64_t>(s.reused_tokens, 0, prompt);
    const int64_t created = std::clamp<int64_t>(int64_t(s.document_tokens) - read, 0, prompt - read);
    return {{"input_tokens", prompt - read - created},
            {"output_tokens", s.num_generated},
            {"cache_read_input_tokens", read},
            {"cache_creation_input_tokens", created}};
}

AnthropicRenderer::AnthropicRenderer(std::string model, std::string id)
    : model_(std::move(model)), id_(std::move(id)) {}

void AnthropicRenderer::prepared(const PreparedRequest& request) { prompt_tokens_ = request.rag.num_prompt_tokens(); }

std::string AnthropicRenderer::whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) {
    const engine::RagResult* r = choices.empty() ? nullptr : choices.front().result;
    const engine::FinishReason reason = r != nullptr ? r->finish_reason : engine::FinishReason::kStop;
    const std::string stop_word = r != nullptr ? r->stop_word : std::string();
    const json body = {{"id", id_},
                       {"type", "message"},
                       {"role", "assistant"},
                       {"model", model_},
                       {"content", json::array({json{{"type", "text"}, {"text", r != nullptr ? r->text : ""}}})},
                       {"stop_reason", anthropic_stop_reason(reason, stop_word)},
                       {"stop_sequence", stop_sequence_json(reason, stop_word)},
                       {"usage", anthropic_usage(usage)}};
    return dump(body);
}

void AnthropicRenderer::stream_open(size_t, const engine::RequestHandle&, std::string& out) {
    const json usage = {{"input_tokens", prompt_tokens_},
                        {"output_tokens", 0},
                        {"cache_read_input_tokens", 0},
                        {"cache_creation_input_tokens", 0}};
    const json message = {{"id", id_},
                          {"type", "message"},
                          {"role", "assistant"},
                          {"model", model_},
                          {"content", json::array()},
                          {"stop_reason", nullptr},
                          {"stop_sequence", nullptr},
                          {"usage", usage}};
    out += event("message_start", {{"type", "message_start"}, {"message", message}});
    out += event("content_block_start",
                 {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
    out += event("ping", {{"type", "ping"}});
}

void AnthropicRenderer::stream_token(size_t, const engine::RequestEvent& e, std::string& out) {
    if (e.text.empty()) return;  // held back (a partial character or a possible stop string)
    out +=
        event("content_block_delta",
              {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", e.text}}}});
}

void AnthropicRenderer::stream_end(size_t choice, const engine::RequestEvent& e, const engine::RequestStats& stats,
                                   std::string& out) {
    stream_token(choice, e, out);
    out += event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
    out += event("message_delta", {{"type", "message_delta"},
                                   {"delta",
                                    {{"stop_reason", anthropic_stop_reason(e.finish_reason, e.stop_word)},
                                     {"stop_sequence", stop_sequence_json(e.finish_reason, e.stop_word)}}},
                                   {"usage", anthropic_usage(stats)}});
}

void AnthropicRenderer::stream_close(const engine::RequestStats&, std::string& out) {
    out += event("message_stop", {{"type", "message_stop"}});
}

void AnthropicRenderer::stream_error(const ApiError& e, std::string& out) {
    out += sse_named_event("error", anthropic_error_json(e));
}

std::string AnthropicRenderer::keep_alive() const { return event("ping", {{"type", "ping"}}); }

std::string AnthropicRenderer::error_body(const ApiError& e) const { return anthropic_error_json(e); }

}  // namespace lazyattn::server
