#include "server/http_util.h"

#include "core/utf8.h"

namespace lazyattn::server {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) {
    res.status = error.http_status;
    if (error.http_status == 429 || error.http_status == 503) res.set_header("Retry-After", "1");
    res.set_content(error.to_json(), "application/json");
}

std::optional<ApiError> parse_json_body(const httplib::Request& req, nlohmann::json& out) {
    if (!text::is_valid_utf8(req.body)) {
        return invalid_request("the request body is not valid UTF-8", "", "invalid_utf8");
    }
    if (req.body.empty())
        return invalid_request("the request body is empty (expected a JSON object)", "", "invalid_json");
    try {
        out = nlohmann::json::parse(req.body);
    } catch (const nlohmann::json::parse_error& e) {
        return invalid_request(std::string("malformed JSON: ") + e.what(), "", "invalid_json");
    }
    return std::nullopt;
}

}  // namespace lazyattn::server
