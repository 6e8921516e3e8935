// tool_choice `required` and a named function as a grammar: the reply must be calls in the
// family's own markup (tool_format.h) whose arguments match the function's JSON schema, compiled
// by XGrammar as a structural tag (fixed strings around schema-constrained JSON). So even a 135M
// model emits a call the parser accepts. parallel_tool_calls false: exactly one call.
#pragma once

#include <optional>

#include "grammar/constraint.h"
#include "grammar/constraint_compiler.h"
#include "server/api_error.h"
#include "server/tool_calls/tool_definitions.h"

namespace lazyattn::server::tool_calls {

// The constraint of a forced choice (request.forced()); its field is the request's choice field.
grammar::ConstraintSpec tool_constraint(const ToolRequest& request);

// Every tool's parameters checked as a JSON schema (the compiler's bounds and the engine's
// converter, without computing token masks: ConstraintCompiler::check): a 400 naming the tool's
// parameters field when one does not convert. A forced choice then compiles them all in one
// structural tag (cached by its text: tools, choice, family and parallel_tool_calls, JSON keys
// sorted), bounded in time by the compiler. A build without the grammar engine checks nothing
// here (a forced choice is refused when its constraint is compiled).
std::optional<ApiError> check_tool_schemas(const ToolRequest& request, grammar::ConstraintCompiler& compiler);

}  // namespace lazyattn::server::tool_calls
