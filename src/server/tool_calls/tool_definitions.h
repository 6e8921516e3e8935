// Tool calls (docs/api.md "Tool calls"): what a request offers the model and how it may call.
//
// How to call this module without the HTTP layer (the Python extension does):
//   1. Make a ToolRequest: parse_openai_tools() reads an OpenAI body's tools / tool_choice /
//      parallel_tool_calls; or fill one by hand and run check_tool_request().
//   2. Give it to the GenerationRequest (GenerationRequest::tools); ServingFront::prepare then
//      picks the template's family (tool_format.h), renders the tools through the chat template
//      (or a system message: chat_tools.h), checks every schema against the grammar engine, and
//      enforces `required` / a named function with a grammar (tool_constraint()).
//   3. Parse the reply: parse_tool_calls() on the whole text, or a ToolCallStream fed the text as
//      it comes (tool_call_parser.h). Both give OpenAI-shaped calls; nothing is ever executed.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/tool_calls/tool_format.h"

namespace lazyattn::server::tool_calls {

struct ToolDefinition {
    std::string name;  // ^[a-zA-Z0-9_-]{1,64}$
    std::string description;
    nlohmann::json parameters;  // a JSON schema object; {"type": "object", "properties": {}} when not given
    // The request fields they came from, named in errors ("tools[0].function.name", ...).
    std::string name_field;
    std::string parameters_field;
};

enum class ToolChoice {
    kAuto,      // the model may call (calls parsed, tools rendered)
    kNone,      // tools not rendered and replies not parsed: plain text
    kRequired,  // at least one call, enforced by a grammar
    kNamed,     // exactly the named function (`named`), enforced by a grammar
};

struct ToolRequest {
    std::vector<ToolDefinition> tools;
    ToolChoice choice = ToolChoice::kAuto;
    std::string named;                         // kNamed
    bool parallel = true;                      // parallel_tool_calls: false allows at most one call
    std::string choice_field = "tool_choice";  // named in errors about the choice
    ToolFormat format;                         // the template's family (set by ServingFront::prepare)

    // Tools are rendered and replies parsed: tools given and the choice is not none.
    bool active() const { return !tools.empty() && choice != ToolChoice::kNone; }
    // A grammar forces the reply to be calls.
    bool forced() const { return active() && (choice == ToolChoice::kRequired || choice == ToolChoice::kNamed); }
    const ToolDefinition* find(std::string_view name) const;
    // The tools as OpenAI lists them ({"type": "function", "function": {name, description,
    // parameters}}): what templates iterate and the fallback system message prints.
    nlohmann::json openai_tools() const;
};

// Bounds on what one request may offer: a hostile list cannot take the renderer's or the
// grammar engine's time (each schema is compiled within grammar::CompileLimits as well).
inline constexpr size_t kMaxTools = 128;
inline constexpr size_t kMaxToolsBytes =
    64 * 1024;                                  // the tools' JSON together (a forced call's grammar holds them all)
inline constexpr int kMaxToolSchemaDepth = 12;  // nesting of one parameters schema

// ^[a-zA-Z0-9_-]{1,64}$ (OpenAI's rule for function names).
bool valid_tool_name(std::string_view name);

// Checks names (valid, distinct), schemas (objects, bounded depth), the count and size bounds,
// and that a named choice is among the tools. `tools_field` names the list ("tools").
std::optional<ApiError> check_tool_request(const ToolRequest& request, const std::string& tools_field);

// OpenAI chat's fields: tools ([{"type": "function", "function": {"name", "description"?,
// "parameters"?, "strict"?}}]), tool_choice ("auto" | "none" | "required" | {"type":
// "function", "function": {"name"}}) and parallel_tool_calls. `out` stays empty when the body
// has no tools (an empty list included); a required or named choice without tools is a 400.
std::optional<ApiError> parse_openai_tools(const nlohmann::json& body, std::optional<ToolRequest>& out);

}  // namespace lazyattn::server::tool_calls
