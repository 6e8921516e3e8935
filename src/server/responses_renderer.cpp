#include "server/responses_renderer.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "server/serving_front.h"
#include "server/sse.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// OpenAI's ids are a prefix and an opaque string; 24 random bytes in hex keep them unguessable.
std::string random_id(const char* prefix) {
    thread_local std::mt19937_64 rng(std::random_device{}());
    std::string id = prefix;
    char hex[17];
    for (int i = 0; i < 3; ++i) {
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(rng()));
        id += hex;
    }
    return id;
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

json usage_json(const engine::RequestStats& s) {
    return {{"input_tokens", s.num_prompt_tokens},
            // document_tokens: lazyattn's extension, as in chat's prompt_tokens_details.
            {"input_tokens_details", {{"cached_tokens", s.reused_tokens}, {"document_tokens", s.document_tokens}}},
            {"output_tokens", s.num_generated},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", s.num_prompt_tokens + s.num_generated}};
}

// ResponseError.code is one of a closed list; the HTTP face of the error picks the nearest.
const char* failure_code(const ApiError& e) {
    if (e.http_status == 429) return "rate_limit_exceeded";
    if (e.http_status >= 400 && e.http_status < 500) return "invalid_prompt";
    return "server_error";
}

}  // namespace

ResponsesRenderer::ResponsesRenderer(ResponsesEcho echo, std::string model, ApiDialect dialect)
    : echo_(std::move(echo)),
      model_(std::move(model)),
      dialect_(dialect),
      id_(random_id("resp_")),
      message_id_(random_id("msg_")),
      created_at_(unix_now()) {}

json ResponsesRenderer::message_json(const std::string& status) const {
    json content = json::array();
    if (status != "in_progress") {
        content.push_back({{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}});
    }
    return {{"type", "message"},
            {"id", message_id_},
            {"status", status},
            {"role", "assistant"},
            {"content", std::move(content)}};
}

json ResponsesRenderer::function_call_json(const tool_calls::ToolCall& call, size_t k) const {
    return {{"type", "function_call"}, {"id", call_item_ids_.at(k)},  {"call_id", call.id},
            {"name", call.name},       {"arguments", call.arguments}, {"status", "completed"}};
}

json ResponsesRenderer::response_json(const std::string& status, const engine::RequestStats* usage) const {
    json output = json::array();
    if (status == "completed" || status == "incomplete" || (status == "failed" && opened_)) {
        // A reply of calls alone has no message item (unless it streamed one).
        if (calls_.empty() || !text_.empty() || opened_)
            output.push_back(message_json(status == "failed" ? "incomplete" : status));
        for (size_t k = 0; k < calls_.size(); ++k) output.push_back(function_call_json(calls_[k], k));
    }
    json tools = json::array();
    json tool_choice = "auto";
    if (tools_) {
        for (const tool_calls::ToolDefinition& t : tools_->tools) {
            tools.push_back({{"type", "function"},
                             {"name", t.name},
                             {"description", t.description},
                             {"parameters", t.parameters},
                             {"strict", false}});
        }
        if (tools_->choice == tool_calls::ToolChoice::kNamed) {
            tool_choice = {{"type", "function"}, {"name", tools_->named}};
        } else if (tools_->choice == tool_calls::ToolChoice::kRequired) {
            tool_choice = "required";
        } else if (tools_->choice == tool_calls::ToolChoice::kNone) {
            tool_choice = "none";
        }
    }
    json r = {{"id", id_},
              {"object", "response"},
              {"created_at", created_at_},
              {"status", status},
              {"background", false},
              {"error", status == "failed" ? error_ : json(nullptr)},
              {"incomplete_details", status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json(nullptr)},
              {"instructions", echo_.instructions ? json(*echo_.instructions) : json(nullptr)},
              {"max_output_tokens", echo_.max_output_tokens ? json(*echo_.max_output_tokens) : json(nullptr)},
              {"metadata", echo_.metadata},
              {"model", model_},
              {"output", std::move(output)},
              {"parallel_tool_calls", tools_ ? tools_->parallel : true},
              {"previous_response_id", echo_.previous_response_id ? json(*echo_.previous_response_id) : json(nullptr)},
              {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
              {"store", echo_.store},
              {"temperature", echo_.temperature},
              {"text", {{"format", echo_.text_format}}},
              {"tool_choice", std::move(tool_choice)},
              {"tools", std::move(tools)},
              {"top_p", echo_.top_p},
              {"truncation", echo_.truncation},
              {"usage", usage != nullptr ? usage_json(*usage) : json(nullptr)},
              {"user", echo_.user ? json(*echo_.user) : json(nullptr)}};
    if (status == "completed" || status == "incomplete") r["completed_at"] = unix_now();
    return r;
}

std::string ResponsesRenderer::finished_status() const {
    // OpenAI: a length stop is "incomplete". llama-server answers "completed" whatever stopped it
    // (the stream's last event is then response.completed, which its clients wait for).
    const bool incomplete = finish_ == engine::FinishReason::kLength && dialect_ == ApiDialect::kOpenAI;
    return incomplete ? "incomplete" : "completed";
}

void ResponsesRenderer::emit(const char* type, json fields, std::string& out) {
    fields["type"] = type;
    fields["sequence_number"] = sequence_++;
    out += sse_named_event(type, dump(fields));
}

void ResponsesRenderer::prepared(const PreparedRequest& request) {
    timings_per_token_ = request.gen.timings_per_token;
    if (request.gen.tools) tools_ = request.gen.tools;  // echoed, tool_choice none included
    if (tools_ && tools_->active())
        tool_stream_.emplace(*tools_, uint64_t(std::random_device{}()) << 32 | std::random_device{}());
}

std::string ResponsesRenderer::whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) {
    // One output per response (the parser lets no `n` through).
    if (!choices.empty() && choices.front().result != nullptr) {
        text_ = choices.front().result->text;
        finish_ = choices.front().result->finish_reason;
        if (tool_stream_) {
            tool_calls::ToolCallDelta d = tool_stream_->feed(text_);
            tool_calls::ToolCallDelta rest = tool_stream_->finish();
            text_ = d.content + rest.content;
            for (auto* part : {&d, &rest}) {
                for (tool_calls::ToolCall& c : part->calls) {
                    call_item_ids_.push_back(random_id("fc_"));
                    calls_.push_back(std::move(c));
                }
            }
        }
    }
    std::string body = dump(response_json(finished_status(), &usage));
    if (on_done_) on_done_(id_, body, text_);
    return body;
}

void ResponsesRenderer::stream_open(size_t choice, const engine::RequestHandle&, std::string& out) {
    if (choice != 0 || opened_) return;
    emit("response.created", {{"response", response_json("in_progress", nullptr)}}, out);
    emit("response.in_progress", {{"response", response_json("in_progress", nullptr)}}, out);
    emit("response.output_item.added", {{"output_index", 0}, {"item", message_json("in_progress")}}, out);
    opened_ = true;
    emit("response.content_part.added",
         {{"item_id", message_id_},
          {"output_index", 0},
          {"content_index", 0},
          {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}},
         out);
}

void ResponsesRenderer::stream_progress(size_t choice, const engine::RequestEvent& e, std::string& out) {
    if (choice != 0) return;
    json fields = {{"response", response_json("in_progress", nullptr)},
                   {"prompt_progress", prompt_progress_json(e.timings)}};
    if (timings_per_token_) fields["timings"] = llama_timings(e.timings);
    emit("response.in_progress", std::move(fields), out);
}

void ResponsesRenderer::stream_token(size_t choice, const engine::RequestEvent& e, std::string& out) {
    if (choice != 0) return;
    timings_.note(e);
    if (e.text.empty()) return;  // text held back (a partial character, a possible stop)
    if (tool_stream_) return send_tool_delta(tool_stream_->feed(e.text), out);
    text_ += e.text;
    json fields = {{"item_id", message_id_},
                   {"output_index", 0},
                   {"content_index", 0},
                   {"delta", e.text},
                   {"logprobs", json::array()}};
    if (timings_per_token_ && timings_.any) fields["timings"] = llama_timings(timings_.latest);
    emit("response.output_text.delta", std::move(fields), out);
}

// Text outside the calls as output_text deltas of the message; each call as an output item.
void ResponsesRenderer::send_tool_delta(const tool_calls::ToolCallDelta& d, std::string& out) {
    if (!d.content.empty()) {
        text_ += d.content;
        emit("response.output_text.delta",
             {{"item_id", message_id_},
              {"output_index", 0},
              {"content_index", 0},
              {"delta", d.content},
              {"logprobs", json::array()}},
             out);
    }
    for (const tool_calls::ToolCall& c : d.calls) {
        const size_t k = calls_.size();
        call_item_ids_.push_back(random_id("fc_"));
        calls_.push_back(c);
        const int index = int(k) + 1;
        json added = function_call_json(c, k);
        added["arguments"] = "";
        added["status"] = "in_progress";
        emit("response.output_item.added", {{"output_index", index}, {"item", std::move(added)}}, out);
        emit("response.function_call_arguments.delta",
             {{"item_id", call_item_ids_[k]}, {"output_index", index}, {"delta", c.arguments}}, out);
        emit("response.function_call_arguments.done",
             {{"item_id", call_item_ids_[k]}, {"output_index", index}, {"arguments", c.arguments}}, out);
        emit("response.output_item.done", {{"output_index", index}, {"item", function_call_json(c, k)}}, out);
    }
}

void ResponsesRenderer::stream_end(size_t choice, const engine::RequestEvent& e, const engine::RequestStats&,
                                   std::string& out) {
    if (choice != 0) return;
    finish_ = e.finish_reason;
    if (tool_stream_) send_tool_delta(tool_stream_->finish(), out);
    const std::string status = finished_status();
    emit("response.output_text.done",
         {{"item_id", message_id_},
          {"output_index", 0},
          {"content_index", 0},
          {"text", text_},
          {"logprobs", json::array()}},
         out);
    emit("response.content_part.done",
         {{"item_id", message_id_},
          {"output_index", 0},
          {"content_index", 0},
          {"part", {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}}}},
         out);
    emit("response.output_item.done", {{"output_index", 0}, {"item", message_json(status)}}, out);
}

void ResponsesRenderer::stream_close(const engine::RequestStats& usage, std::string& out) {
    const std::string status = finished_status();
    json response = response_json(status, &usage);
    if (on_done_) on_done_(id_, dump(response), text_);
    json fields = {{"response", std::move(response)}};
    if (timings_per_token_) fields["timings"] = llama_timings(usage);
    emit(status == "incomplete" ? "response.incomplete" : "response.completed", std::move(fields), out);
}

void ResponsesRenderer::stream_error(const ApiError& given, std::string& out) {
    const ApiError e = responses_field_names(given);
    emit("error",
         {{"code", e.code.empty() ? json(e.type) : json(e.code)},
          {"message", e.message},
          {"param", e.param.empty() ? json(nullptr) : json(e.param)}},
         out);
    error_ = {{"code", failure_code(e)}, {"message", e.message}};
    emit("response.failed", {{"response", response_json("failed", nullptr)}}, out);
}

std::string ResponsesRenderer::error_body(const ApiError& e) const { return responses_field_names(e).to_json(); }

}  // namespace lazyattn::server
