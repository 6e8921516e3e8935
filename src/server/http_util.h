// Small helpers every route uses: JSON bodies in (UTF-8 checked, parse errors as 400) and out,
// and errors written as OpenAI error JSON (with Retry-After on 429).
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace lazyattn::server {

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, const ApiError& error);

// Parses the request body as JSON: 400 invalid_utf8 when the bytes are not UTF-8, 400
// invalid_json (with the parser's reason) when they are not JSON.
std::optional<ApiError> parse_json_body(const httplib::Request& req, nlohmann::json& out);

}  // namespace lazyattn::server
