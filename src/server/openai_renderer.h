// OpenAiRenderer: the OpenAI completions and chat completions shapes (openai_response.h) as an
// ApiRenderer: whole bodies with n choices, and stream chunks: chat opens each choice with an
// assistant-role chunk; completions with echo open with the prompt (and its logprobs); then
// content chunks, each carrying the logprobs of the tokens it completes; then an empty delta with
// the finish_reason. When every choice ended: the usage chunk when asked for, then [DONE]; after
// an error event, [DONE]. Chat replies are split by the request's reasoning_format
// (server/reasoning_split.h): thoughts as reasoning_content, whole or streamed; with tools, the
// answer's calls come out as tool_calls (server/tool_calls/), streamed as delta.tool_calls.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "server/api_renderer.h"
#include "server/llama_telemetry.h"
#include "server/logprobs_json.h"
#include "server/openai_response.h"
#include "server/output_options.h"
#include "server/reasoning_split.h"
#include "server/tool_calls/tool_call_parser.h"
#include "server/verbose_reply.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::server {

class OpenAiRenderer : public ApiRenderer {
public:
    OpenAiRenderer(const tokenizer::Tokenizer& tokenizer, ResponseMeta meta);

    void prepared(const PreparedRequest& request) override;
    std::string whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) override;
    void stream_open(size_t choice, const engine::RequestHandle& handle, std::string& out) override;
    void stream_token(size_t choice, const engine::RequestEvent& e, std::string& out) override;
    void stream_end(size_t choice, const engine::RequestEvent& e, const engine::RequestStats& stats,
                    std::string& out) override;
    void stream_close(const engine::RequestStats& usage, std::string& out) override;
    void stream_error(const ApiError& e, std::string& out) override;
    // return_progress: chat, an assistant-role chunk; completions, an empty text chunk; each
    // with prompt_progress (and timings under timings_per_token).
    void stream_progress(size_t choice, const engine::RequestEvent& e, std::string& out) override;

private:
    struct StreamChoice {
        TokenLogprobList pending;  // logprobs of tokens whose text has not gone out yet
        int64_t text_bytes = 0;    // bytes of text written (completions' text_offset)
        ReasoningStream reasoning{ReasoningFormat::kNone};
        std::optional<tool_calls::ToolCallStream> tools;  // chat with tools: calls taken out of the content
    };

    void write_token(size_t i, const engine::RequestEvent& e, std::string& out);
    void write_end(size_t i, const engine::RequestEvent& e, std::string& out);
    nlohmann::json take_logprobs(StreamChoice& c);
    void send_split(StreamChoice& c, int i, const ReasoningStream::Delta& d, std::string& out);
    void send_content(StreamChoice& c, int i, const std::string& text, std::string& out);
    void send_tool_delta(StreamChoice& c, int i, const tool_calls::ToolCallDelta& d, std::string& out);
    ChoiceBody choice_body(const ChoiceResult& choice, size_t i) const;

    const tokenizer::Tokenizer& tokenizer_;
    ResponseMeta meta_;
    OutputOptions output_;
    std::vector<StreamChoice> streams_;
    ReasoningFormat reasoning_ = ReasoningFormat::kNone;    // chat: the request's (or the server's)
    bool prompt_opens_reasoning_ = false;                   // the prompt ended inside <think>
    std::shared_ptr<const tool_calls::ToolRequest> tools_;  // chat with tools to parse; null: none
    uint64_t tool_id_seed_ = 0;                             // call ids of choice i: seed + i
    // llama-server's telemetry (llama_telemetry.h, verbose_reply.h), as the request asked.
    bool timings_per_token_ = false;         // every chunk after the first carries `timings`
    std::vector<StreamTimings> timings_;     // per choice: its latest event's
    std::unique_ptr<VerboseReply> verbose_;  // __verbose (null: not asked for)
};

}  // namespace lazyattn::server
