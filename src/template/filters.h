// The filter table shared by filters.cpp (text and number filters) and filters_collections.cpp
// (list and dict filters); each file registers its own entries.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "template/value.h"

namespace lazyattn::tmpl {

using FilterFn = std::function<Value(Interpreter&, const Value&, CallArgs&)>;
using FilterTable = std::map<std::string, FilterFn, std::less<>>;

void add_text_filters(FilterTable& table);
void add_collection_filters(FilterTable& table);

// Argument readers: the positional `index` or keyword `name`, else `fallback`.
bool bool_arg(const CallArgs& args, size_t index, std::string_view name, bool fallback);
int64_t int_arg(const CallArgs& args, size_t index, std::string_view name, int64_t fallback);
// Python's str of the argument, or null when absent or None.
const std::string* string_arg(const CallArgs& args, size_t index, std::string_view name);

}  // namespace lazyattn::tmpl
