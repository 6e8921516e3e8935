// The tool lists the tool-call unit tests offer (get_weather + search; Llama 3.1 built-ins), shared by the parser tests
// (test_tool_calls_units.cpp) and the template / constraint / API tests
// (test_tool_templates_units.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/tool_calls/tool_definitions.h"

namespace lazyattn::server::tool_calls {

inline ToolRequest weather_tools(ToolFamily family, bool parallel = true) {
    ToolRequest r;
    ToolDefinition w;
    w.name = "get_weather";
    w.parameters =
        nlohmann::json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
    ToolDefinition s;
    s.name = "search";
    s.parameters = nlohmann::json::parse(
        R"({"type":"object","properties":{"query":{"type":"string"},"k":{"type":"integer","minimum":1,"maximum":5}},"required":["query"]})");
    r.tools = {w, s};
    r.format.family = family;
    r.parallel = parallel;
    return r;
}

// Tools named as Llama 3.1's built-ins (python / code_interpreter take code, the others a query).
inline ToolRequest builtin_tools_request(const std::vector<std::string>& names) {
    ToolRequest r;
    for (const std::string& n : names) {
        ToolDefinition t;
        t.name = n;
        t.parameters = n == "python" || n == "code_interpreter"
                           ? nlohmann::json::parse(R"({"type":"object","properties":{"code":{"type":"string"}}})")
                           : nlohmann::json::parse(R"({"type":"object","properties":{"query":{"type":"string"}}})");
        r.tools.push_back(t);
    }
    r.format.family = ToolFamily::kLlama3;
    return r;
}

}  // namespace lazyattn::server::tool_calls
