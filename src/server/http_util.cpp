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

namespace {

// Calls on_bracket(+1 or -1, position) for each bracket of JSON text outside its strings, until it
// returns false; the one rule of what a bracket is (strings and their escapes skipped).
template <class OnBracket>
void scan_json_brackets(std::string_view text, size_t begin, OnBracket on_bracket) {
    bool in_string = false, escaped = false;
    for (size_t i = begin; i < text.size(); ++i) {
        const char c = text[i];
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
            if (!on_bracket(+1, i)) return;
        } else if (c == ']' || c == '}') {
            if (!on_bracket(-1, i)) return;
        }
    }
}

}  // namespace

int json_nesting_depth(std::string_view text, int limit) {
    int depth = 0, deepest = 0;
    scan_json_brackets(text, 0, [&](int step, size_t) {
        depth += step;
        if (depth > deepest && (deepest = depth) > limit) {
            deepest = limit + 1;
            return false;
        }
        return true;
    });
    return deepest;
}

size_t json_value_end(std::string_view text, size_t begin) {
    size_t end = std::string_view::npos;
    int depth = 0;
    scan_json_brackets(text, begin, [&](int step, size_t pos) {
        depth += step;
        if (depth > 0) return true;
        end = pos + 1;  // closed (or an unbalanced closing bracket)
        return false;
    });
    return end;
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
