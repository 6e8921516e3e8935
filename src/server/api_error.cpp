#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include "engine/request/context_overflow.h"

namespace lazyattn::server {

namespace {

// Every error names a code (docs/api.md lists them); one made without a code gets its status's.
const char* default_code(int status) {
    switch (status) {
        case 400:
            return "invalid_value";
        case 401:
            return "invalid_api_key";
        case 404:
            return "not_found";
        case 429:
            return "rate_limit_exceeded";
        case 503:
            return "unavailable";
        default:
            return status < 500 ? "invalid_request" : "internal_error";
    }
}

}  // namespace

std::string ApiError::to_json() const {
    nlohmann::json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", default_code(http_status)}};
    if (!param.empty()) e["param"] = param;
    if (!code.empty()) e["code"] = code;
    if (n_prompt_tokens >= 0) e["n_prompt_tokens"] = n_prompt_tokens;
    if (n_ctx >= 0) e["n_ctx"] = n_ctx;
    return nlohmann::json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError invalid_request(std::string message, std::string param, std::string code) {
    return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

ApiError api_error_from_status(const Status& status) {
    const std::string& m = status.message();
    switch (status.code()) {
        case StatusCode::kOk:
            return {500, "internal error: no error to report", "server_error", "", "internal_error"};
        case StatusCode::kInvalidArgument:
            return invalid_request(m, "", "invalid_value");
        case StatusCode::kUnsupported:
            return invalid_request(m, "", "unsupported");
        case StatusCode::kOutOfRange:
            return invalid_request(m, "", "context_length_exceeded");
        case StatusCode::kUnavailable:
            return {429, m, "rate_limit_error", "", "queue_full"};
        case StatusCode::kResourceExhausted:
            return invalid_request(m, "max_tokens", "kv_pool_exceeded");
        case StatusCode::kNotFound:
            return {404, m, "not_found_error", "", "not_found"};
        case StatusCode::kCancelled:
            return {503, m, "server_error", "", "shutting_down"};
        default:
            return {500, status.to_string(), "server_error", "", "internal_error"};
    }
}

ApiError generation_error(const Status& st, bool chat) {
    if (st.code() == StatusCode::kNotFound) return invalid_request(st.message(), "documents", "document_not_found");
    ApiError e = api_error_from_status(st);
    if (e.code == "context_length_exceeded") e.param = chat ? "messages" : "prompt";
    // OpenAI's clients read the status and `code`; llama-server's read `type` and the sizes.
    if (const auto sizes = engine::parse_context_overflow(st)) {
        e.type = "exceed_context_size_error";
        e.n_prompt_tokens = sizes->prompt_tokens;
        e.n_ctx = sizes->context_length;
    }
    return e;
}

ApiError cancelled_generation_error() {
    return {503, "the request was cancelled (the server is shutting down)", "server_error", "", "cancelled"};
}

}  // namespace lazyattn::server
