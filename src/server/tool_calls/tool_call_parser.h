// The model's reply -> OpenAI tool calls, whole or as it streams. A call is recognised only in
// its family's markers (tool_format.h) and only when it is valid: JSON that parses (nested at
// most kMaxCallDepth), names a function the request offered, and carries arguments that are a
// JSON object (or a string holding one). Anything else, markers included, stays text: a call
// that is not valid is reported as content, never as a call (nothing is executed here, or
// anywhere in lazyattn). With parallel_tool_calls false, a second call is text too.
//
// Content is the text outside the calls; whitespace right before and after a call is dropped.
// ToolCallStream is the only parser: parse_tool_calls() feeds it the whole text at once, so a
// reply streamed in any chunks gives the same content and calls as the whole (the streamed
// content is the concatenation of the deltas). While a possible marker is incomplete, or
// whitespace might precede a call, the text is held back, as ReasoningStream holds a partial
// <think> tag; a call is sent once it is complete and checked.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls/tool_definitions.h"

namespace lazyattn::server::tool_calls {

inline constexpr int kMaxCallDepth = 64;

struct ToolCall {
    std::string id;  // "call_..." (a Mistral call's own id when it carries a valid one)
    std::string name;
    std::string arguments;  // JSON text of an object
};

struct ToolCallDelta {
    std::string content;          // text to send as content now
    std::vector<ToolCall> calls;  // calls completed now, in order
};

class ToolCallStream {
public:
    // `request` must outlive the stream. Call ids are drawn from `id_seed` (the same seed gives
    // the same ids: a test can compare a streamed reply with the whole).
    ToolCallStream(const ToolRequest& request, uint64_t id_seed);

    ToolCallDelta feed(std::string_view text);
    // The end of the reply: what was held back, and a call left open if it is complete JSON.
    ToolCallDelta finish();
    size_t num_calls() const { return num_calls_; }

private:
    void scan(ToolCallDelta& out, bool at_end);
    bool scan_text(ToolCallDelta& out, bool at_end);  // true when a call opened
    bool scan_call(ToolCallDelta& out, bool at_end);  // true when the call ended (either way)
    // The call's extent in buf_ after its marker, and its body as a JSON call object; nullopt
    // while more text may complete it. body_end 0 with an empty body: the marker was text.
    struct CallExtent {
        size_t end = 0;
        std::string body;
    };
    std::optional<CallExtent> json_call_extent(bool at_end) const;
    std::optional<CallExtent> named_args_extent(bool at_end) const;  // name[CALL_ID]id[ARGS]{...}
    std::optional<CallExtent> python_tag_extent(bool at_end) const;  // Llama 3.1's built-in tools
    void end_call(ToolCallDelta& out, std::string_view body, std::string_view markup);
    void emit_text(ToolCallDelta& out, std::string_view text);
    std::string next_id();

    const ToolRequest* request_;
    uint64_t seed_;
    std::string buf_;  // text received and not yet decided
    bool in_call_ = false;
    std::string open_;         // the marker that opened the current call
    std::string gap_;          // whitespace dropped before the current call (put back if it is text)
    bool at_start_ = true;     // nothing but whitespace and calls so far (llama3's bare JSON call)
    bool after_call_ = false;  // whitespace that follows a call is dropped
    size_t num_calls_ = 0;
    uint64_t ids_drawn_ = 0;
};

struct ParsedReply {
    std::optional<std::string> content;  // null when the reply was calls alone
    std::vector<ToolCall> calls;
};

ParsedReply parse_tool_calls(std::string_view text, const ToolRequest& request, uint64_t id_seed);

// OpenAI's message.tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}].
nlohmann::json openai_tool_calls(const std::vector<ToolCall>& calls);
// The two stream deltas of one call (OpenAI's delta.tool_calls entries): the first names it
// ({"index", "id", "type", "function": {"name", "arguments": ""}}), the second carries its
// arguments ({"index", "function": {"arguments"}}).
std::vector<nlohmann::json> openai_tool_call_deltas(const ToolCall& call, int index);

}  // namespace lazyattn::server::tool_calls
