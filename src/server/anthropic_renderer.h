// Anthropic Messages responses: the whole message ({"type": "message", "content": [{"type":
// "text"}], "stop_reason", "usage"}) and its streaming event sequence, as named SSE events:
//   message_start, content_block_start, ping, content_block_delta (text_delta) ...,
//   content_block_stop, message_delta (stop_reason, usage), message_stop
// and `event: error` for a failure after the 200. The engine's finish reasons map onto
// Anthropic's: stop by end of generation -> end_turn, by a stop string -> stop_sequence (that
// string in stop_sequence), length -> max_tokens.
//
// usage: cache_read_input_tokens are the prompt tokens served from lazyattn's cache;
// cache_creation_input_tokens the document tokens computed and cached by this request (its
// document tokens less those read from the cache); input_tokens the rest of the prompt, so the
// three add up to the whole prompt, as Anthropic's do. message_start counts the whole prompt as
// input_tokens; message_delta, at the end, carries the split (Anthropic's clients take it from there).
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request/finish_reason.h"
#include "server/api_renderer.h"
#include "server/tool_calls/tool_call_parser.h"

namespace lazyattn::server {

// "msg_" and 24 random hex digits.
std::string make_message_id();
// Anthropic's stop_reason for a normal finish ("end_turn", "stop_sequence", "max_tokens").
const char* anthropic_stop_reason(engine::FinishReason reason, const std::string& stop_word);
// {input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens}.
nlohmann::json anthropic_usage(const engine::RequestStats& stats);

class AnthropicRenderer : public ApiRenderer {
public:
    // `model`: the name the response carries (the request's, as Anthropic echoes it).
    explicit AnthropicRenderer(std::string model, std::string id = make_message_id());

    void prepared(const PreparedRequest& request) override;
    std::string whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) override;
    void stream_open(size_t choice, const engine::RequestHandle& handle, std::string& out) override;
    void stream_token(size_t choice, const engine::RequestEvent& e, std::string& out) override;
    void stream_end(size_t choice, const engine::RequestEvent& e, const engine::RequestStats& stats,
                    std::string& out) override;
    void stream_close(const engine::RequestStats& usage, std::string& out) override;
    void stream_error(const ApiError& e, std::string& out) override;
    std::string keep_alive() const override;
    std::string error_body(const ApiError& e) const override;

    const std::string& id() const { return id_; }

private:
    std::string model_;
    std::string id_;
    // The laid-out prompt's length: message_start's input_tokens (the engine's split between
    // cached and computed tokens is known only at the end, and message_delta carries it).
    int32_t prompt_tokens_ = 0;
    // Client tools (server/tool_calls/): calls become tool_use blocks, streamed after the text
    // block as content_block_start + input_json_delta + content_block_stop.
    void send_tool_delta(const tool_calls::ToolCallDelta& d, std::string& out);
    std::shared_ptr<const tool_calls::ToolRequest> tools_;
    std::optional<tool_calls::ToolCallStream> tool_stream_;
    uint64_t tool_id_seed_ = 0;
    bool text_open_ = false;  // the text block (index 0) is open
    int next_block_ = 1;      // the index of the next tool_use block
};

}  // namespace lazyattn::server
