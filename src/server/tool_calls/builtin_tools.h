// Llama 3.1's built-in tools, as llama-server serves them (docs/function-calling.md of llama.cpp):
// when a request offers a function named brave_search, web_search, wolfram_alpha, python or
// code_interpreter to a template that reads `builtin_tools` (Llama 3.1 / 3.3's own), the template
// is told of them (its `builtin_tools` variable: it then announces "Environment: ipython" and
// "Tools: brave_search, ..."), and the model calls them its trained way after <|python_tag|>:
//
//   <|python_tag|>brave_search.call(query="lazy attention")   -> brave_search {"query": "..."}
//   <|python_tag|>wolfram_alpha.call(query="2+2")             -> wolfram_alpha {"query": "2+2"}
//   <|python_tag|>print(2 + 2)                                -> python (or code_interpreter,
//                                                                 whichever is offered) {"code": "print(2 + 2)"}
//
// These become OpenAI tool calls of the offered function of that name; nothing is executed. A
// name the request did not offer stays text, as every call that is not valid does.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls/tool_definitions.h"

namespace lazyattn::server::tool_calls {

// The template's builtin_tools list for the request's offered tools: brave_search (for
// brave_search or web_search), wolfram_alpha, code_interpreter (for python or code_interpreter);
// empty when none is offered.
std::vector<std::string> template_builtin_tools(const ToolRequest& request);

// The offered function that raw code after <|python_tag|> calls: python, else code_interpreter;
// null when neither is offered.
const ToolDefinition* code_tool(const ToolRequest& request);

// `name.call(key=value, ...)` at the start of `text` (spaces before it allowed): Python keyword
// arguments whose values are literals (strings in either quotes, numbers, True / False / None,
// JSON lists and objects).
struct BuiltinCallScan {
    enum State {
        kIncomplete,  // a prefix of such a call: more text may complete it
        kNotACall,    // not such a call
        kCall,
    } state = kNotACall;
    size_t end = 0;  // kCall: one past its closing parenthesis
    std::string name;
    nlohmann::json arguments;  // kCall: an object
};
BuiltinCallScan scan_builtin_call(std::string_view text);

}  // namespace lazyattn::server::tool_calls
