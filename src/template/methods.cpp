// The Python methods chat templates call on values: str (strip, split, startswith, format, ...),
// dict (get, items, keys, values). As in jinja2's ImmutableSandboxedEnvironment, a method that
// would modify a list or dict (append, pop, update, ...) raises instead of running.
#include <algorithm>
#include <map>

#include "template/builtins.h"
#include "template/filters.h"
#include "template/interpreter.h"
#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

using MethodFn = std::function<Value(Interpreter&, const Value& self, CallArgs&)>;
using MethodTable = std::map<std::string, MethodFn, std::less<>>;

Value string_list(std::vector<std::string> parts) {
    ValueList out;
    for (auto& p : parts) out.emplace_back(std::move(p));
    return Value::list(std::move(out));
}

// startswith/endswith take a string or a tuple of strings.
bool affix_matches(const Value& affix, const std::string& s, bool prefix) {
    auto one = [&](const Value& a) {
        if (!a.is_string()) throw TemplateError("startswith/endswith take a string or a tuple of strings");
        const std::string& x = a.as_string();
        return prefix ? s.starts_with(x) : s.ends_with(x);
    };
    if (affix.is_list()) return std::any_of(affix.items().begin(), affix.items().end(), one);
    return one(affix);
}

// str.format with "{}", "{0}", "{name}" and "{{" "}}"; format specs and conversions are refused.
Value string_format(Interpreter& in, const std::string& fmt, CallArgs& args) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        const char c = fmt[i];
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
                out.push_back('}');
                ++i;
                continue;
            }
            throw TemplateError("single '}' encountered in format string");
        }
        if (c != '{') {
            out.push_back(c);
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out.push_back('{');
            ++i;
            continue;
        }
        const size_t close = fmt.find('}', i);
        if (close == std::string::npos) throw TemplateError("single '{' encountered in format string");
        const std::string field = fmt.substr(i + 1, close - i - 1);
        if (field.find_first_of(":!.[") != std::string::npos)
            throw TemplateError("format specs in str.format are not supported");
        const Value* v = nullptr;
        if (field.empty()) {
            v = auto_index < args.positional.size() ? &args.positional[auto_index++] : nullptr;
        } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
            const size_t k = field.size() < 9 ? std::stoul(field) : SIZE_MAX;
            v = k < args.positional.size() ? &args.positional[k] : nullptr;
        } else {
            v = find_arg(args, SIZE_MAX, field);
        }
        if (!v) throw TemplateError("str.format: no argument for '{" + field + "}'");
        out += in.str(*v);
        i = close;
    }
    return Value(out);
}

int64_t count_occurrences(const std::string& s, const std::string& sub) {
    if (sub.empty()) return static_cast<int64_t>(code_point_length(s)) + 1;
    int64_t n = 0;
    for (size_t pos = s.find(sub); pos != std::string::npos; pos = s.find(sub, pos + sub.size())) ++n;
    return n;
}

// Byte offset to code-point index, for find()'s result.
int64_t code_point_index(const std::string& s, size_t byte) {
    return byte == std::string::npos ? -1
                                     : static_cast<int64_t>(code_point_length(std::string_view(s).substr(0, byte)));
}

bool all_code_points(const std::string& s, bool (*pred)(char32_t)) {
    const std::vector<char32_t> cps = to_code_points(s);
    return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred);
}

const MethodTable& string_methods() {
    static const MethodTable table = [] {
        MethodTable t;
        auto strip = [](bool left, bool right) {
            return [left, right](Interpreter&, const Value& self, CallArgs& args) {
                return Value(python_strip(self.as_string(), string_arg(args, 0, "chars"), left, right));
            };
        };
        t["strip"] = strip(true, true);
        t["lstrip"] = strip(true, false);
        t["rstrip"] = strip(false, true);
        t["split"] = [](Interpreter&, const Value& self, CallArgs& args) {
            return string_list(
                python_split(self.as_string(), string_arg(args, 0, "sep"), int_arg(args, 1, "maxsplit", -1)));
        };
        t["rsplit"] = [](Interpreter&, const Value& self, CallArgs& args) {
            return string_list(
                python_rsplit(self.as_string(), string_arg(args, 0, "sep"), int_arg(args, 1, "maxsplit", -1)));
        };
        t["splitlines"] = [](Interpreter& in, const Value& self, CallArgs&) {
            std::vector<std::string> lines;
            std::string cur;
            const std::string& s = self.as_string();
            for (size_t i = 0; i < s.size(); ++i) {
                if (s[i] == '\n' || s[i] == '\r') {
                    lines.push_back(cur);
                    cur.clear();
                    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
                } else {
                    cur.push_back(s[i]);
                }
            }
            if (!cur.empty()) lines.push_back(cur);
            in.charge(s.size());
            return string_list(std::move(lines));
        };
        t["startswith"] = [](Interpreter&, const Value& self, CallArgs& args) {
            const Value* a = find_arg(args, 0, "prefix");
            if (!a) throw TemplateError("startswith() needs a prefix");
            return Value(affix_matches(*a, self.as_string(), true));
        };
        t["endswith"] = [](Interpreter&, const Value& self, CallArgs& args) {
            const Value* a = find_arg(args, 0, "suffix");
            if (!a) throw TemplateError("endswith() needs a suffix");
            return Value(affix_matches(*a, self.as_string(), false));
        };
        t["upper"] = [](Interpreter&, const Value& self, CallArgs&) { return Value(ascii_upper(self.as_string())); };
        t["lower"] = [](Interpreter&, const Value& self, CallArgs&) { return Value(ascii_lower(self.as_string())); };
        t["title"] = [](Interpreter&, const Value& self, CallArgs&) { return Value(python_title(self.as_string())); };
        t["capitalize"] = [](Interpreter&, const Value& self, CallArgs&) {
            return Value(python_capitalize(self.as_string()));
        };
        t["replace"] = [](Interpreter& in, const Value& self, CallArgs& args) {
            CallArgs filter_args{args.positional, {}};
            for (const auto& kw : args.keyword) filter_args.keyword.push_back(kw);
            static const FilterTable filters = [] {
                FilterTable f;
                add_text_filters(f);
                return f;
            }();
            return filters.at("replace")(in, self, filter_args);
        };
        t["find"] = [](Interpreter&, const Value& self, CallArgs& args) {
            const std::string* sub = string_arg(args, 0, "sub");
            if (!sub) throw TemplateError("find() needs a string");
            return Value(code_point_index(self.as_string(), self.as_string().find(*sub)));
        };
        t["rfind"] = [](Interpreter&, const Value& self, CallArgs& args) {
            const std::string* sub = string_arg(args, 0, "sub");
            if (!sub) throw TemplateError("rfind() needs a string");
            return Value(code_point_index(self.as_string(), self.as_string().rfind(*sub)));
        };
        t["count"] = [](Interpreter&, const Value& self, CallArgs& args) {
            const std::string* sub = string_arg(args, 0, "sub");
            if (!sub) throw TemplateError("count() needs a string");
            return Value(count_occurrences(self.as_string(), *sub));
        };
        t["format"] = [](Interpreter& in, const Value& self, CallArgs& args) {
            return string_format(in, self.as_string(), args);
        };
        t["join"] = [](Interpreter& in, const Value& self, CallArgs& args) {
            if (args.positional.size() != 1) throw TemplateError("join() takes one iterable");
            std::string out;
            bool first = true;
            for (const Value& item : in.iterate(args.positional[0])) {
                if (!item.is_string())
                    throw TemplateError("join(): expected str, found " + std::string(item.type_name()));
                if (!first) out += self.as_string();
                first = false;
                out += item.as_string();
                in.charge(item.as_string().size() + self.as_string().size());
            }
            return Value(out);
        };
        t["removeprefix"] = [](Interpreter&, const Value& self, CallArgs& args) {
            const std::string* p = string_arg(args, 0, "prefix");
            const std::string& s = self.as_string();
            return Value(p && s.starts_with(*p) ? s.substr(p->size()) : s);
        };
        t["removesuffix"] = [](Interpreter&, const Value& self, CallArgs& args) {
            const std::string* p = string_arg(args, 0, "suffix");
            const std::string& s = self.as_string();
            return Value(p && !p->empty() && s.ends_with(*p) ? s.substr(0, s.size() - p->size()) : s);
        };
        t["isspace"] = [](Interpreter&, const Value& self, CallArgs&) {
            return Value(all_code_points(self.as_string(), is_python_space));
        };
        t["isdigit"] = [](Interpreter&, const Value& self, CallArgs&) {
            return Value(all_code_points(self.as_string(), [](char32_t c) { return c >= '0' && c <= '9'; }));
        };
        t["isalpha"] = [](Interpreter&, const Value& self, CallArgs&) {
            return Value(
                all_code_points(self.as_string(), [](char32_t c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }));
        };
        t["isalnum"] = [](Interpreter&, const Value& self, CallArgs&) {
            return Value(all_code_points(self.as_string(), [](char32_t c) {
                return ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9');
            }));
        };
        return t;
    }();
    return table;
}

const MethodTable& dict_methods() {
    static const MethodTable table = [] {
        MethodTable t;
        t["get"] = [](Interpreter&, const Value& self, CallArgs& args) {
            if (args.positional.empty()) throw TemplateError("get() needs a key");
            if (const Value* v = self.dict_items().find(args.positional[0])) return *v;
            return args.positional.size() > 1 ? args.positional[1] : Value::none();
        };
        t["items"] = [](Interpreter&, const Value& self, CallArgs&) {
            ValueList out;
            for (const auto& [k, v] : self.dict_items().entries()) out.push_back(Value::list({k, v}, true));
            return Value::list(std::move(out));
        };
        t["keys"] = [](Interpreter&, const Value& self, CallArgs&) {
            ValueList out;
            for (const auto& [k, _] : self.dict_items().entries()) out.push_back(k);
            return Value::list(std::move(out));
        };
        t["values"] = [](Interpreter&, const Value& self, CallArgs&) {
            ValueList out;
            for (const auto& [_, v] : self.dict_items().entries()) out.push_back(v);
            return Value::list(std::move(out));
        };
        return t;
    }();
    return table;
}

constexpr std::string_view kMutatingListMethods[] = {"append", "extend", "insert", "pop",
                                                     "remove", "clear",  "sort",   "reverse"};
constexpr std::string_view kMutatingDictMethods[] = {"pop", "popitem", "clear", "update", "setdefault"};

Value unsafe(const Value& obj, const std::string& name) {
    const std::string type = obj.type_name();
    return Value::callable(name, [type, name](Interpreter&, CallArgs&) -> Value {
        throw TemplateError("access to attribute '" + name + "' of '" + type +
                            "' object is unsafe (templates cannot modify values)");
    });
}

}  // namespace

Value find_method(const Value& obj, const std::string& name) {
    const MethodTable* table = nullptr;
    if (obj.is_string()) table = &string_methods();
    if (obj.is_dict()) {
        table = &dict_methods();
        for (std::string_view m : kMutatingDictMethods) {
            if (m == name) return unsafe(obj, name);
        }
    }
    if (obj.is_list()) {
        for (std::string_view m : kMutatingListMethods) {
            if (m == name) return unsafe(obj, name);
        }
        return {};
    }
    if (!table) return {};
    const auto it = table->find(name);
    if (it == table->end()) return {};
    const MethodFn& fn = it->second;
    return Value::callable(name, [self = obj, &fn](Interpreter& in, CallArgs& args) { return fn(in, self, args); });
}

}  // namespace lazyattn::tmpl
