// Server-sent events (text/event-stream) as the OpenAI streaming API uses them: each event is
// "data: <one JSON object>\n\n", the stream ends with "data: [DONE]\n\n". Comment lines (":" ...)
// carry nothing and clients skip them.
#pragma once

#include <string>
#include <string_view>

namespace lazyattn::server {

inline constexpr const char* kSseContentType = "text/event-stream";
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// One event; a payload with line breaks becomes one data line per line, as the format requires.
std::string sse_event(std::string_view payload);
// A named event ("event: <name>" before its data), as the Anthropic and Responses streams use.
std::string sse_named_event(std::string_view name, std::string_view payload);
std::string sse_comment(std::string_view text);

}  // namespace lazyattn::server
