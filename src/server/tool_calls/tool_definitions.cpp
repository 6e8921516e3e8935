#include "server/tool_calls/tool_definitions.h"

#include <set>

#include "server/request_fields.h"

namespace lazyattn::server::tool_calls {
namespace {

using json = nlohmann::json;
using Err = std::optional<ApiError>;
using fields::absent;
using fields::read_string;
using fields::type_error;
using fields::value_error;

int depth_of(const json& v, int limit) {
    if (limit < 0 || !(v.is_object() || v.is_array())) return 0;
    int deepest = 0;
    for (const json& child : v) deepest = std::max(deepest, depth_of(child, limit - 1));
    return deepest + 1;
}

// One {"type": "function", "function": {...}} entry.
Err parse_openai_tool(const json& t, const std::string& p, ToolDefinition& out) {
    if (!t.is_object()) return type_error(p, "an object ({\"type\": \"function\", \"function\": {...}})");
    if (!t.contains("type") || t.at("type") != "function") {
        return invalid_request("'" + p + ".type' must be \"function\" (the only tool type served)", p + ".type",
                               "invalid_value");
    }
    if (!t.contains("function") || !t.at("function").is_object()) return type_error(p + ".function", "an object");
    const json& f = t.at("function");
    if (!f.contains("name")) {
        return invalid_request("'" + p + ".function.name' is required", p + ".function.name",
                               "missing_required_parameter");
    }
    if (auto e = read_string(f.at("name"), p + ".function.name", out.name)) return e;
    if (!absent(f, "description")) {
        if (auto e = read_string(f.at("description"), p + ".function.description", out.description)) return e;
    }
    out.name_field = p + ".function.name";
    out.parameters_field = p + ".function.parameters";
    if (!absent(f, "parameters")) {
        out.parameters = f.at("parameters");
    } else {
        out.parameters = json{{"type", "object"}, {"properties", json::object()}};
    }
    if (!absent(f, "strict") && !f.at("strict").is_boolean()) return type_error(p + ".function.strict", "a boolean");
    return std::nullopt;
}

Err parse_tool_choice(const json& v, ToolRequest& out) {
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "auto") {
            out.choice = ToolChoice::kAuto;
        } else if (s == "none") {
            out.choice = ToolChoice::kNone;
        } else if (s == "required") {
            out.choice = ToolChoice::kRequired;
        } else {
            return value_error("tool_choice",
                               "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", "
                               "\"function\": {\"name\": ...}}");
        }
        return std::nullopt;
    }
    if (!v.is_object()) return type_error("tool_choice", "a string or an object");
    if (!v.contains("type") || v.at("type") != "function") {
        return value_error("tool_choice.type", "must be \"function\"");
    }
    if (!v.contains("function") || !v.at("function").is_object() || !v.at("function").contains("name")) {
        return invalid_request("'tool_choice.function.name' is required", "tool_choice.function.name",
                               "missing_required_parameter");
    }
    if (auto e = read_string(v.at("function").at("name"), "tool_choice.function.name", out.named)) return e;
    out.choice = ToolChoice::kNamed;
    out.choice_field = "tool_choice.function.name";
    return std::nullopt;
}

}  // namespace

const ToolDefinition* ToolRequest::find(std::string_view name) const {
    for (const ToolDefinition& t : tools) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

json ToolRequest::openai_tools() const {
    json list = json::array();
    for (const ToolDefinition& t : tools) {
        json f = {{"name", t.name}};
        if (!t.description.empty()) f["description"] = t.description;
        f["parameters"] = t.parameters;
        list.push_back({{"type", "function"}, {"function", std::move(f)}});
    }
    return list;
}

bool valid_tool_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::optional<ApiError> check_tool_request(const ToolRequest& r, const std::string& tools_field) {
    if (r.tools.size() > kMaxTools) {
        return value_error(tools_field, "may hold at most " + std::to_string(kMaxTools) + " tools");
    }
    std::set<std::string> names;
    size_t bytes = 0;
    for (size_t i = 0; i < r.tools.size(); ++i) {
        const ToolDefinition& t = r.tools[i];
        const std::string name_field =
            t.name_field.empty() ? tools_field + "[" + std::to_string(i) + "].name" : t.name_field;
        if (!valid_tool_name(t.name)) {
            return value_error(name_field, "must match ^[a-zA-Z0-9_-]{1,64}$ (got '" + clip_for_message(t.name) + "')");
        }
        if (!names.insert(t.name).second) return value_error(name_field, "repeats the tool name '" + t.name + "'");
        if (!t.parameters.is_object()) return type_error(t.parameters_field, "a JSON schema object");
        if (depth_of(t.parameters, kMaxToolSchemaDepth + 1) > kMaxToolSchemaDepth) {
            return value_error(t.parameters_field, "is nested deeper than " + std::to_string(kMaxToolSchemaDepth));
        }
        bytes += t.name.size() + t.description.size() + t.parameters.dump().size();
        if (bytes > kMaxToolsBytes) {
            return value_error(tools_field, "is larger than " + std::to_string(kMaxToolsBytes) + " bytes in all");
        }
    }
    if (r.choice == ToolChoice::kNamed && r.find(r.named) == nullptr) {
        return value_error(r.choice_field,
                           "names '" + clip_for_message(r.named) + "', which is not among the request's tools");
    }
    if ((r.choice == ToolChoice::kRequired || r.choice == ToolChoice::kNamed) && r.tools.empty()) {
        return value_error(r.choice_field, "asks for a tool call, and the request offers no tools");
    }
    return std::nullopt;
}

std::optional<ApiError> parse_openai_tools(const json& body, std::optional<ToolRequest>& out) {
    out.reset();
    ToolRequest r;
    if (!absent(body, "tools")) {
        const json& list = body.at("tools");
        if (!list.is_array()) return type_error("tools", "a list of {\"type\": \"function\", \"function\": {...}}");
        // Sized before anything is copied out of it.
        if (list.size() > kMaxTools) {
            return value_error("tools", "may hold at most " + std::to_string(kMaxTools) + " tools");
        }
        for (size_t i = 0; i < list.size(); ++i) {
            ToolDefinition t;
            if (auto e = parse_openai_tool(list[i], "tools[" + std::to_string(i) + "]", t)) return e;
            r.tools.push_back(std::move(t));
        }
    }
    if (!absent(body, "tool_choice")) {
        if (auto e = parse_tool_choice(body.at("tool_choice"), r)) return e;
    }
    if (!absent(body, "parallel_tool_calls")) {
        if (!body.at("parallel_tool_calls").is_boolean()) return type_error("parallel_tool_calls", "a boolean");
        r.parallel = body.at("parallel_tool_calls").get<bool>();
    }
    if (auto e = check_tool_request(r, "tools")) return e;
    if (!r.tools.empty()) out = std::move(r);
    return std::nullopt;
}

}  // namespace lazyattn::server::tool_calls
