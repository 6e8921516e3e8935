#include "server/tool_calls/builtin_tools.h"

#include "server/http_util.h"  // json_value_end
#include "server/tool_calls/tool_call_parser.h"

namespace lazyattn::server::tool_calls {
namespace {

using json = nlohmann::json;
using Scan = BuiltinCallScan;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

size_t skip_space(std::string_view s, size_t pos) {
    while (pos < s.size() && is_space(s[pos])) ++pos;
    return pos;
}

// `word` at `pos`: kCall when all of it is there, kIncomplete when the text ends inside it.
Scan::State expect(std::string_view s, size_t pos, std::string_view word) {
    const std::string_view have = s.substr(std::min(pos, s.size()), word.size());
    if (have != word.substr(0, have.size())) return Scan::kNotACall;
    return have.size() == word.size() ? Scan::kCall : Scan::kIncomplete;
}

// One Python literal at `pos`: its value and where it ends.
struct Literal {
    Scan::State state = Scan::kNotACall;
    size_t end = 0;
    json value;
};

// A quoted string: its text becomes a JSON string literal (the escapes JSON and Python share
// read the same; \' is Python's alone) and is parsed as one.
Literal string_literal(std::string_view s, size_t pos) {
    const char quote = s[pos];
    std::string as_json = "\"";
    for (size_t i = pos + 1; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '\\') {
            if (i + 1 >= s.size()) return {Scan::kIncomplete, 0, nullptr};
            const char next = s[++i];
            if (next == '\'') {
                as_json += '\'';
            } else {
                as_json += '\\';
                as_json += next;
            }
        } else if (c == quote) {
            as_json += '"';
            json v = json::parse(as_json, nullptr, false);
            if (v.is_discarded()) return {Scan::kNotACall, 0, nullptr};
            return {Scan::kCall, i + 1, std::move(v)};
        } else if (c == '"') {
            as_json += "\\\"";  // inside '...'
        } else if (c == '\n') {
            return {Scan::kNotACall, 0, nullptr};  // a quoted string ends on its line
        } else {
            as_json += c;
        }
    }
    return {Scan::kIncomplete, 0, nullptr};
}

Literal literal(std::string_view s, size_t pos) {
    if (pos >= s.size()) return {Scan::kIncomplete, 0, nullptr};
    const char c = s[pos];
    if (c == '"' || c == '\'') return string_literal(s, pos);
    if (c == '[' || c == '{') {
        const size_t end = json_value_end(s, pos);
        if (end == std::string_view::npos) return {Scan::kIncomplete, 0, nullptr};
        if (json_nesting_depth(s.substr(pos, end - pos), kMaxCallDepth) > kMaxCallDepth)
            return {Scan::kNotACall, 0, nullptr};
        json v = json::parse(s.substr(pos, end - pos), nullptr, false);
        if (v.is_discarded()) return {Scan::kNotACall, 0, nullptr};
        return {Scan::kCall, end, std::move(v)};
    }
    // A number or True / False / None: up to the next separator.
    size_t end = pos;
    while (end < s.size() && s[end] != ',' && s[end] != ')' && !is_space(s[end])) ++end;
    if (end == s.size()) return {Scan::kIncomplete, 0, nullptr};
    const std::string_view word = s.substr(pos, end - pos);
    if (word == "True") return {Scan::kCall, end, true};
    if (word == "False") return {Scan::kCall, end, false};
    if (word == "None") return {Scan::kCall, end, nullptr};
    json v = json::parse(word, nullptr, false);
    if (v.is_discarded() || !v.is_number()) return {Scan::kNotACall, 0, nullptr};
    return {Scan::kCall, end, std::move(v)};
}

}  // namespace

std::vector<std::string> template_builtin_tools(const ToolRequest& r) {
    std::vector<std::string> names;
    if (r.find("brave_search") != nullptr || r.find("web_search") != nullptr) names.push_back("brave_search");
    if (r.find("wolfram_alpha") != nullptr) names.push_back("wolfram_alpha");
    if (code_tool(r) != nullptr) names.push_back("code_interpreter");
    return names;
}

const ToolDefinition* code_tool(const ToolRequest& r) {
    if (const ToolDefinition* t = r.find("python")) return t;
    return r.find("code_interpreter");
}

BuiltinCallScan scan_builtin_call(std::string_view s) {
    BuiltinCallScan out;
    size_t pos = skip_space(s, 0);
    if (pos == s.size()) {
        out.state = Scan::kIncomplete;
        return out;
    }
    if (!is_ident_start(s[pos])) return out;
    const size_t name_begin = pos;
    while (pos < s.size() && is_ident(s[pos]) && pos - name_begin <= 64) ++pos;
    if (pos == s.size()) {
        out.state = Scan::kIncomplete;
        return out;
    }
    out.name = std::string(s.substr(name_begin, pos - name_begin));
    if (!valid_tool_name(out.name)) return out;
    const Scan::State call = expect(s, pos, ".call(");
    if (call != Scan::kCall) {
        out.state = call;
        return out;
    }
    pos += 6;
    out.arguments = json::object();
    for (bool first = true;; first = false) {
        pos = skip_space(s, pos);
        if (pos == s.size()) {
            out.state = Scan::kIncomplete;
            return out;
        }
        if (s[pos] == ')') {
            out.state = Scan::kCall;
            out.end = pos + 1;
            return out;
        }
        if (!first) {
            if (s[pos] != ',') return out;
            pos = skip_space(s, pos + 1);
            if (pos < s.size() && s[pos] == ')') continue;  // a trailing comma
        }
        const size_t key_begin = pos;
        while (pos < s.size() && is_ident(s[pos])) ++pos;
        pos = skip_space(s, pos);
        if (pos == s.size()) {
            out.state = Scan::kIncomplete;
            return out;
        }
        if (pos == key_begin || !is_ident_start(s[key_begin]) || s[pos] != '=') return out;
        std::string key(s.substr(key_begin, pos - key_begin));
        while (!key.empty() && is_space(key.back())) key.pop_back();
        Literal value = literal(s, skip_space(s, pos + 1));
        if (value.state != Scan::kCall) {
            out.state = value.state;
            return out;
        }
        out.arguments[key] = std::move(value.value);
        pos = value.end;
    }
}

}  // namespace lazyattn::server::tool_calls
