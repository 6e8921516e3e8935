// Python's str behaviours that templates observe, on UTF-8 text: whitespace (str.isspace), strip
// and split, code-point length/indexing, case mapping, and the text forms of values (str(), repr(),
// float repr). Strings are indexed by code point as in Python; invalid UTF-8 bytes count as one
// code point each so that no input can make the helpers fail.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lazyattn::tmpl {

class Value;

bool is_python_space(char32_t cp);

// Code points of `s` (invalid bytes become U+DC80+byte, Python's surrogateescape, so that they
// re-encode to the same byte).
std::vector<char32_t> to_code_points(std::string_view s);
std::string from_code_points(const std::vector<char32_t>& cps, size_t begin, size_t end);
size_t code_point_length(std::string_view s);

// str.strip / lstrip / rstrip: whitespace when `chars` is null, else any of `chars`' code points.
std::string python_strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(sep=None, maxsplit=-1): on whitespace runs when `sep` is null.
std::vector<std::string> python_split(std::string_view s, const std::string* sep, int64_t maxsplit);
// str.rsplit, the same from the right.
std::vector<std::string> python_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);

// ASCII case mapping (other scripts are left as they are; chat templates change the case of role
// names and keywords).
std::string ascii_upper(std::string_view s);
std::string ascii_lower(std::string_view s);
std::string python_capitalize(std::string_view s);  // str.capitalize
std::string python_title(std::string_view s);       // str.title

// Python's repr of a float ("1.0", "0.1", "1e-05", "1e+16", "inf", "nan").
std::string python_float_repr(double v);
// Python's repr of a str ('a', "it's", '\n').
std::string python_string_repr(std::string_view s);
// str(v) and repr(v) as Python prints them (Jinja's {{ v }} is str(v); undefined prints "").
// Nesting deeper than kMaxNesting is an error (a namespace holding itself).
std::string python_str(const Value& v);
std::string python_repr(const Value& v);

inline constexpr int kMaxNesting = 128;

}  // namespace lazyattn::tmpl
