// Jinja's text and number filters, with the behaviour of jinja2 3.1 (and of transformers' own
// tojson, which chat templates get instead of jinja2's HTML-safe one).
#include "template/filters.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {

const Value* find_arg(const CallArgs& args, size_t index, std::string_view name) {
    if (index < args.positional.size()) return &args.positional[index];
    for (const auto& [k, v] : args.keyword) {
        if (k == name) return &v;
    }
    return nullptr;
}

bool bool_arg(const CallArgs& args, size_t index, std::string_view name, bool fallback) {
    const Value* v = find_arg(args, index, name);
    return v ? v->truthy() : fallback;
}

int64_t int_arg(const CallArgs& args, size_t index, std::string_view name, int64_t fallback) {
    const Value* v = find_arg(args, index, name);
    if (!v || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool()) throw TemplateError("argument '" + std::string(name) + "' must be an integer");
    return v->as_int();
}

const std::string* string_arg(const CallArgs& args, size_t index, std::string_view name) {
    const Value* v = find_arg(args, index, name);
    if (!v || v->is_none() || v->is_undefined()) return nullptr;
    if (!v->is_string()) throw TemplateError("argument '" + std::string(name) + "' must be a string");
    return &v->as_string();
}

namespace {

std::string text_of(Interpreter& in, const Value& v) { return v.is_string() ? v.as_string() : in.str(v); }

// Python's str.splitlines() on code points.
std::vector<std::string> split_lines(const std::string& s) {
    const std::vector<char32_t> cps = to_code_points(s);
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
        const char32_t c = cps[i];
        const bool breaks = c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
                            c == 0x2028 || c == 0x2029;
        if (!breaks) continue;
        lines.push_back(from_code_points(cps, start, i));
        if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
        start = i + 1;
    }
    if (start < cps.size()) lines.push_back(from_code_points(cps, start, cps.size()));
    return lines;
}

Value filter_indent(Interpreter& in, const Value& v, CallArgs& args) {
    const Value* width = find_arg(args, 0, "width");
    std::string indention;
    if (width && width->is_string()) {
        indention = width->as_string();
    } else {
        const int64_t n = width ? width->as_int() : 4;
        if (n > 4096) throw TemplateLimitError("indent width above 4096");
        indention.assign(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
    }
    const bool first = bool_arg(args, 1, "first", false), blank = bool_arg(args, 2, "blank", false);
    const std::vector<std::string> lines = split_lines(text_of(in, v) + "\n");
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += "\n";
        if (i > 0 && (blank || !lines[i].empty())) out += indention;
        out += lines[i];
        in.charge(lines[i].size() + indention.size());
    }
    return Value(first ? indention + out : out);
}

// jinja2's title: each word (split at whitespace, '-', and opening brackets) gets an upper-case
// first character and lower-case rest.
Value filter_title(Interpreter& in, const Value& v, CallArgs&) {
    const std::string s = text_of(in, v);
    std::string out;
    bool word_start = true;
    for (char c : s) {
        const bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '-' ||
                         c == '(' || c == '{' || c == '[' || c == '<';
        if (sep) {
            out.push_back(c);
            word_start = true;
            continue;
        }
        if (word_start) {
            out += ascii_upper(std::string(1, c));
        } else {
            out += ascii_lower(std::string(1, c));
        }
        word_start = false;
    }
    return Value(out);
}

Value python_replace(Interpreter& in, const std::string& s, const std::string& old, const std::string& repl,
                     int64_t count) {
    std::string out;
    if (old.empty()) {
        const std::vector<char32_t> cps = to_code_points(s);
        int64_t done = 0;
        for (size_t i = 0; i <= cps.size(); ++i) {
            if (count < 0 || done < count) {
                out += repl;
                ++done;
            }
            if (i < cps.size()) out += from_code_points(cps, i, i + 1);
            in.charge(repl.size() + 4);
        }
        return Value(out);
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t at = s.find(old, pos);
        if (at == std::string::npos) break;
        out.append(s, pos, at - pos);
        out += repl;
        in.charge(at - pos + repl.size());
        pos = at + old.size();
        ++done;
    }
    out.append(s, pos);
    return Value(out);
}

Value to_int(const Value& v, const Value& fallback) {
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float()) {
        if (!std::isfinite(v.as_float()) || std::fabs(v.as_float()) > 9.2e18) return fallback;
        return Value(static_cast<int64_t>(v.as_float()));
    }
    if (v.is_string()) {
        const std::string s = python_strip(v.as_string(), nullptr, true, true);
        char* end = nullptr;
        errno = 0;
        const long long i = std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value(static_cast<int64_t>(i));
        const double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18)
            return Value(static_cast<int64_t>(d));
    }
    return fallback;
}

Value to_float(const Value& v, const Value& fallback) {
    if (v.is_number()) return Value(v.as_float());
    if (v.is_string()) {
        const std::string s = python_strip(v.as_string(), nullptr, true, true);
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size()) return Value(d);
    }
    return fallback;
}

// Python's round(x, n): correctly rounded decimal, halves to even (glibc's printf rounds the exact
// binary value the same way CPython's dtoa does).
double python_round(double x, int64_t digits) {
    if (!std::isfinite(x) || digits > 300) return x;
    if (digits >= 0) {
        char buf[512];
        std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(digits), x);
        return std::strtod(buf, nullptr);
    }
    if (digits < -308) return 0.0 * x;
    const double scale = std::pow(10.0, static_cast<double>(-digits));
    return std::nearbyint(x / scale) * scale;
}

Value filter_round(Interpreter&, const Value& v, CallArgs& args) {
    if (!v.is_number()) throw TemplateError("round: a number is required, not " + std::string(v.type_name()));
    const int64_t precision = int_arg(args, 0, "precision", 0);
    const std::string* method = string_arg(args, 1, "method");
    const std::string how = method ? *method : "common";
    const double x = v.as_float();
    if (how == "common") return Value(python_round(x, precision));
    if (how != "ceil" && how != "floor") throw TemplateError("round: method must be common, ceil or floor");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    return Value((how == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
}

Value filter_wordcount(Interpreter& in, const Value& v, CallArgs&) {
    int64_t words = 0;
    bool in_word = false;
    for (char32_t cp : to_code_points(text_of(in, v))) {
        const bool word = (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
                          cp == '_' || (cp >= 0x80 && !is_python_space(cp));
        if (word && !in_word) ++words;
        in_word = word;
    }
    return Value(words);
}

}  // namespace

void add_text_filters(FilterTable& t) {
    t["abs"] = [](Interpreter&, const Value& v, CallArgs&) {
        if (v.is_float()) return Value(std::fabs(v.as_float()));
        if (!v.is_int() && !v.is_bool())
            throw TemplateError("bad operand type for abs(): '" + std::string(v.type_name()) + "'");
        if (v.as_int() == INT64_MIN) throw TemplateError("integer overflow");
        return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    };
    t["capitalize"] = [](Interpreter& in, const Value& v, CallArgs&) {
        return Value(python_capitalize(text_of(in, v)));
    };
    t["upper"] = [](Interpreter& in, const Value& v, CallArgs&) { return Value(ascii_upper(text_of(in, v))); };
    t["lower"] = [](Interpreter& in, const Value& v, CallArgs&) { return Value(ascii_lower(text_of(in, v))); };
    t["title"] = filter_title;
    t["trim"] = [](Interpreter& in, const Value& v, CallArgs& args) {
        return Value(python_strip(text_of(in, v), string_arg(args, 0, "chars"), true, true));
    };
    t["string"] = [](Interpreter& in, const Value& v, CallArgs&) { return Value(text_of(in, v)); };
    t["safe"] = t["string"];  // no autoescaping in chat templates: marking text safe only makes it a string
    t["replace"] = [](Interpreter& in, const Value& v, CallArgs& args) {
        const std::string* old = string_arg(args, 0, "old");
        const std::string* repl = string_arg(args, 1, "new");
        if (!old || !repl) throw TemplateError("replace() needs the old and new strings");
        return python_replace(in, text_of(in, v), *old, *repl, int_arg(args, 2, "count", -1));
    };
    t["indent"] = filter_indent;
    t["int"] = [](Interpreter&, const Value& v, CallArgs& args) {
        const Value* d = find_arg(args, 0, "default");
        return to_int(v, d ? *d : Value(0));
    };
    t["float"] = [](Interpreter&, const Value& v, CallArgs& args) {
        const Value* d = find_arg(args, 0, "default");
        return to_float(v, d ? *d : Value(0.0));
    };
    t["round"] = filter_round;
    t["wordcount"] = filter_wordcount;
    t["default"] = [](Interpreter&, const Value& v, CallArgs& args) {
        const Value* d = find_arg(args, 0, "default_value");
        const bool boolean = bool_arg(args, 1, "boolean", false);
        if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value(std::string());
        return v;
    };
    t["d"] = t["default"];
    t["tojson"] = [](Interpreter& in, const Value& v, CallArgs& args) {
        const Value* indent = find_arg(args, 1, "indent");
        int ind = -1;
        if (indent && !indent->is_none()) {
            if (!indent->is_int() || indent->as_int() < 0 || indent->as_int() > 64)
                throw TemplateError("tojson: indent must be an integer from 0 to 64");
            ind = static_cast<int>(indent->as_int());
        }
        for (const auto& [k, _] : args.keyword) {
            if (k != "indent" && k != "sort_keys" && k != "ensure_ascii")
                throw TemplateError("tojson: unsupported argument '" + k + "'");
        }
        if (bool_arg(args, 0, "ensure_ascii", false)) throw TemplateError("tojson: ensure_ascii is not supported");
        return Value(to_json(in, v, ind, bool_arg(args, 3, "sort_keys", false)));
    };
}

}  // namespace lazyattn::tmpl
