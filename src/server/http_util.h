// Small helpers every route uses: JSON bodies in (UTF-8 and nesting checked, parse errors as
// 400) and out, and errors written as OpenAI error JSON (with Retry-After on 429 and 503).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "http/http_message.h"
#include "server/api_error.h"
#include "server/bounded_json.h"

namespace lazyattn::server {

// Deepest JSON nesting a request body may have. Ours need 4; the cap keeps every recursive walk
// over a parsed body (copies, destruction) far from the thread's stack limit.
inline constexpr int kMaxJsonDepth = 32;

void send_json(http::HttpResponse& res, int status, const nlohmann::json& body);
void send_error(http::HttpResponse& res, const ApiError& error);

// Parses the request body as JSON: 400 invalid_utf8 when the bytes are not UTF-8, 400
// json_too_deep past kMaxJsonDepth (checked before parsing), 400 invalid_json (with the
// parser's reason) when they are not JSON or hold a number no double can represent, 400
// json_too_large when the parsed value would cost too much for the body's size or a list passes
// `bounds` (both found while parsing: bounded_json.h).
std::optional<ApiError> parse_json_body(const http::HttpRequest& req, nlohmann::json& out,
                                        const JsonBounds& bounds = {});

// The deepest nesting of arrays and objects in JSON text (strings skipped); stops counting past
// `limit` (returns limit + 1).
int json_nesting_depth(std::string_view text, int limit);

// Where the JSON object or array that opens at `begin` ends: one past its closing bracket, or npos
// while it is incomplete. Brackets inside strings do not count (escapes are followed); an
// unbalanced closing bracket ends it there (the text will not parse). The same scan as
// json_nesting_depth's.
size_t json_value_end(std::string_view text, size_t begin = 0);

}  // namespace lazyattn::server
