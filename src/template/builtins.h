// Jinja's built-in filters, tests, globals and the Python methods templates call on values
// (str.strip, dict.get, ...). Each family lives in its own file; this header is their interface to
// the parser (which rejects unknown names as jinja2's compiler does) and the interpreter.
#pragma once

#include <string>
#include <string_view>

#include "template/value.h"

namespace lazyattn::tmpl {

class Interpreter;

bool is_filter_name(std::string_view name);
bool is_test_name(std::string_view name);

// filters.cpp / filters_collections.cpp
Value apply_filter(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args);
// tests.cpp
bool apply_test(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args);
// methods.cpp: a bound method of a str, dict or list (undefined when it has none by that name).
// Methods that would modify a list or dict raise, as in jinja2's ImmutableSandboxedEnvironment.
Value find_method(const Value& obj, const std::string& name);
// globals.cpp: raise_exception, namespace, range, strftime_now, dict.
Value make_globals();

// Argument helpers shared by the families: the positional argument `index`, else the keyword
// `name`, else null.
const Value* find_arg(const CallArgs& args, size_t index, std::string_view name);

// Python's ordering (<): -1, 0, 1; raises for types Python cannot order (`op` names the operator
// in the message). interpreter.cpp.
int compare_values(const Value& a, const Value& b, const std::string& op);
// Python's `item in container` (substring, list member, dict key; false for undefined).
bool value_contains(const Value& container, const Value& item);

// Python's json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys) (json_text.cpp);
// indent < 0 means none. Raises for values JSON cannot hold (undefined, functions).
std::string to_json(Interpreter& in, const Value& v, int indent, bool sort_keys);

}  // namespace lazyattn::tmpl
