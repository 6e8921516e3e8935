// The checks every API's request parser makes on a JSON field and the 400 each failure answers,
// naming the field: one spelling for the OpenAI, llama-server native, Anthropic, Responses and
// structured-output parsers, so a field refused in one API is refused the same way in the others.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/utf8.h"
#include "server/api_error.h"

namespace lazyattn::server::fields {

using json = nlohmann::json;
using Err = std::optional<ApiError>;

// A field that is missing or null (both mean "not given").
inline bool absent(const json& body, const char* key) { return !body.contains(key) || body.at(key).is_null(); }

// "'param' must be <expected>" (invalid_type).
inline Err type_error(const std::string& param, const char* expected) {
    return invalid_request("'" + param + "' must be " + expected, param, "invalid_type");
}

// "'param' <what>" (invalid_value).
inline Err value_error(const std::string& param, const std::string& what) {
    return invalid_request("'" + param + "' " + what, param, "invalid_value");
}

// "'param': <why>" (unsupported): a field this server does not honour, refused rather than dropped.
inline Err unsupported(const std::string& param, const std::string& why) {
    return invalid_request("'" + param + "': " + why, param, "unsupported");
}

// A string field that must be valid UTF-8.
inline Err read_string(const json& v, const std::string& param, std::string& out) {
    if (!v.is_string()) return type_error(param, "a string");
    out = v.get<std::string>();
    if (!text::is_valid_utf8(out)) return invalid_request("'" + param + "' is not valid UTF-8", param, "invalid_utf8");
    return std::nullopt;
}

}  // namespace lazyattn::server::fields
