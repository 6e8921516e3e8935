// JSON string literals as Python's json.dumps(ensure_ascii=False) writes them: the short escapes
// (\" \\ \n \r \t \b \f), other control characters as \u00XX in lowercase hex, everything else
// (UTF-8 included) as is. The one escaper of the project: structured logs and the chat
// templates' tojson (which must match Python byte for byte) both use it.
#pragma once

#include <string>
#include <string_view>

namespace lazyattn {

// Appends `s` to `out` as a quoted JSON string.
void append_json_string(std::string& out, std::string_view s);

}  // namespace lazyattn
