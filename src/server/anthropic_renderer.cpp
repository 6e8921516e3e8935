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

// Anthropic's tool_use ids: "toolu_" and the call id's random part.
std::string tool_use_id(const std::string& call_id) {
    return call_id.rfind("call_", 0) == 0 ? "toolu_" + call_id.substr(5) : call_id;
}

json tool_use_block(const tool_calls::ToolCall& c) {
    return {{"type", "tool_use"},
            {"id", tool_use_id(c.id)},
            {"name", c.name},
            {"input", json::parse(c.arguments, nullptr, false)}};
}

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

void AnthropicRenderer::prepared(const PreparedRequest& request) {
    prompt_tokens_ = request.rag.num_prompt_tokens();
    if (request.gen.tools && request.gen.tools->active()) {
        tools_ = request.gen.tools;
        tool_id_seed_ = uint64_t(std::random_device{}()) << 32 | std::random_device{}();
        tool_stream_.emplace(*tools_, tool_id_seed_);
    }
}

std::string AnthropicRenderer::whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) {
    const engine::RagResult* r = choices.empty() ? nullptr : choices.front().result;
    const engine::FinishReason reason = r != nullptr ? r->finish_reason : engine::FinishReason::kStop;
    const std::string stop_word = r != nullptr ? r->stop_word : std::string();
    json content = json::array({json{{"type", "text"}, {"text", r != nullptr ? r->text : ""}}});
    std::string stop_reason = anthropic_stop_reason(reason, stop_word);
    if (tools_ && r != nullptr) {
        const tool_calls::ParsedReply parsed = tool_calls::parse_tool_calls(r->text, *tools_, tool_id_seed_);
        if (!parsed.calls.empty()) {
            content = json::array();
            if (parsed.content) content.push_back({{"type", "text"}, {"text", *parsed.content}});
            for (const tool_calls::ToolCall& c : parsed.calls) content.push_back(tool_use_block(c));
            if (reason == engine::FinishReason::kStop) stop_reason = "tool_use";
        }
    }
    const json body = {{"id", id_},
                       {"type", "message"},
                       {"role", "assistant"},
                       {"model", model_},
                       {"content", std::move(content)},
                       {"stop_reason", stop_reason},
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
    text_open_ = true;
}

void AnthropicRenderer::stream_token(size_t, const engine::RequestEvent& e, std::string& out) {
    if (e.text.empty()) return;  // held back (a partial character or a possible stop string)
    if (tool_stream_) return send_tool_delta(tool_stream_->feed(e.text), out);
    out +=
        event("content_block_delta",
              {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", e.text}}}});
}

// Text into the text block while it is open; each call as a tool_use block of its own (the text
// block is closed before the first: Anthropic's blocks do not interleave).
void AnthropicRenderer::send_tool_delta(const tool_calls::ToolCallDelta& d, std::string& out) {
    if (!d.content.empty() && text_open_) {
        out += event(
            "content_block_delta",
            {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", d.content}}}});
    }
    for (const tool_calls::ToolCall& c : d.calls) {
        if (text_open_) {
            out += event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
            text_open_ = false;
        }
        json start = tool_use_block(c);
        start["input"] = json::object();
        const int index = next_block_++;
        out += event("content_block_start",
                     {{"type", "content_block_start"}, {"index", index}, {"content_block", std::move(start)}});
        out += event("content_block_delta", {{"type", "content_block_delta"},
                                             {"index", index},
                                             {"delta", {{"type", "input_json_delta"}, {"partial_json", c.arguments}}}});
        out += event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
    }
}

void AnthropicRenderer::stream_end(size_t choice, const engine::RequestEvent& e, const engine::RequestStats& stats,
                                   std::string& out) {
    stream_token(choice, e, out);
    std::string stop_reason = anthropic_stop_reason(e.finish_reason, e.stop_word);
    if (tool_stream_) {
        send_tool_delta(tool_stream_->finish(), out);
        if (tool_stream_->num_calls() > 0 && e.finish_reason == engine::FinishReason::kStop) stop_reason = "tool_use";
    }
    if (text_open_) out += event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
    text_open_ = false;
    out += event(
        "message_delta",
        {{"type", "message_delta"},
         {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence_json(e.finish_reason, e.stop_word)}}},
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
