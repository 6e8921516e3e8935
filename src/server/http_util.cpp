#include "server/http_util.h"

#include "core/utf8.h"

namespace lazyattn::server {

void send_json(http::HttpResponse& res, int status, const nlohmann::json& body) {
    res.status = status;
    res.content_type = "application/json";
    res.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void send_error(http::HttpResponse& res, const ApiError& error) {
    res.status = error.http_status;
    res.stream = nullptr;
    res.content_type = "application/json";
    if (error.http_status == 429 || error.http_status == 503) res.set_header("Retry-After", "1");
    res.body = error.to_json();
}

int json_nesting_depth(std::string_view text, int limit) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest && (deepest = depth) > limit) return limit + 1;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

std::optional<ApiError> parse_json_body(const http::HttpRequest& req, nlohmann::json& out, const JsonBounds& bounds) {
    if (!text::is_valid_utf8(req.body)) {
        return invalid_request("the request body is not valid UTF-8", "", "invalid_utf8");
    }
    if (req.body.empty())
        return invalid_request("the request body is empty (expected a JSON object)", "", "invalid_json");
    // No JSON text holds a raw NUL (strings escape control characters), and the JSON parser
    // takes one as the end of its input: "{...}\0anything" would pass with the rest ignored.
    if (const size_t nul = req.body.find('\0'); nul != std::string::npos) {
        return invalid_request("the request body holds a NUL byte at offset " + std::to_string(nul) +
                                   " (bytes after the JSON value, or inside it, are refused)",
                               "", "invalid_json");
    }
    if (json_nesting_depth(req.body, kMaxJsonDepth) > kMaxJsonDepth) {
        return invalid_request("the JSON body is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", "",
                               "json_too_deep");
    }
    auto parsed = parse_bounded_json(req.body, bounds);
    if (!parsed.ok()) {
        const std::string& m = parsed.status().message();
        return invalid_request(m, "", m.rfind("malformed JSON", 0) == 0 ? "invalid_json" : "json_too_large");
    }
    out = std::move(parsed).value();
    return std::nullopt;
}

}  // namespace lazyattn::server
