// ResponsesRenderer: the OpenAI Responses shapes as an ApiRenderer. A whole response is one
// `response` object holding one assistant message with one output_text part; status "completed"
// (stop) or "incomplete" with incomplete_details.reason "max_output_tokens" (length; in
// llama-server's dialect "completed", as llama-server answers: server/api_dialect.h). A stream is
// named SSE events, each with its sequence_number (0, 1, ...):
//   response.created, response.in_progress, response.output_item.added,
//   response.content_part.added, response.output_text.delta..., response.output_text.done,
//   response.content_part.done, response.output_item.done, then response.completed (or
//   response.incomplete) carrying the whole response with its usage.
// An error after the 200 is an `error` event, then response.failed (status "failed", its error).
// No [DONE]: the Responses stream ends with its last event. Errors before the 200 are OpenAI's
// {"error": {...}} with this API's field names (max_output_tokens, input).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/api_dialect.h"
#include "server/api_renderer.h"
#include "server/llama_telemetry.h"
#include "server/responses_request.h"
#include "server/tool_calls/tool_call_parser.h"

namespace lazyattn::server {

class ResponsesRenderer : public ApiRenderer {
public:
    ResponsesRenderer(ResponsesEcho echo, std::string model, ApiDialect dialect = ApiDialect::kOpenAI);

    // Called once with the finished response (completed or incomplete): its id, its body as
    // answered (or as response.completed carried it) and its text. For ResponseStore.
    using OnDone = std::function<void(const std::string& id, const std::string& body, const std::string& text)>;
    void on_done(OnDone done) { on_done_ = std::move(done); }

    const std::string& id() const { return id_; }
    const std::string& message_id() const { return message_id_; }
    // The function calls the reply made (complete once OnDone is called).
    const std::vector<tool_calls::ToolCall>& calls() const { return calls_; }

    void prepared(const PreparedRequest& request) override;
    std::string whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) override;
    void stream_open(size_t choice, const engine::RequestHandle& handle, std::string& out) override;
    void stream_token(size_t choice, const engine::RequestEvent& e, std::string& out) override;
    void stream_end(size_t choice, const engine::RequestEvent& e, const engine::RequestStats& stats,
                    std::string& out) override;
    void stream_close(const engine::RequestStats& usage, std::string& out) override;
    void stream_error(const ApiError& e, std::string& out) override;
    // return_progress: a response.in_progress event carrying prompt_progress.
    void stream_progress(size_t choice, const engine::RequestEvent& e, std::string& out) override;
    std::string error_body(const ApiError& e) const override;

private:
    // The response object: "in_progress" (no output yet), "completed", "incomplete", "failed".
    nlohmann::json response_json(const std::string& status, const engine::RequestStats* usage) const;
    nlohmann::json message_json(const std::string& status) const;
    // The finished response's status: "incomplete" for a length stop in OpenAI's dialect, else
    // "completed" (the stream's last event is named after it).
    std::string finished_status() const;
    // One named event: `fields` with its type and the next sequence number.
    void emit(const char* type, nlohmann::json fields, std::string& out);

    ResponsesEcho echo_;
    std::string model_;
    ApiDialect dialect_;
    std::string id_;
    std::string message_id_;
    int64_t created_at_ = 0;
    int64_t sequence_ = 0;
    std::string text_;  // the output so far
    engine::FinishReason finish_ = engine::FinishReason::kNone;
    bool opened_ = false;  // the message item was announced
    nlohmann::json error_ = nullptr;
    OnDone on_done_;
    // llama-server's telemetry (llama_telemetry.h): `timings` on each delta and on the end.
    bool timings_per_token_ = false;
    StreamTimings timings_;
    // Function tools (server/tool_calls/): calls become function_call output items after the
    // message, streamed as output_item.added, function_call_arguments.delta / .done, output_item.done.
    nlohmann::json function_call_json(const tool_calls::ToolCall& call, size_t k) const;
    void send_tool_delta(const tool_calls::ToolCallDelta& d, std::string& out);
    std::shared_ptr<const tool_calls::ToolRequest> tools_;
    std::optional<tool_calls::ToolCallStream> tool_stream_;
    std::vector<tool_calls::ToolCall> calls_;
    std::vector<std::string> call_item_ids_;
};

}  // namespace lazyattn::server
