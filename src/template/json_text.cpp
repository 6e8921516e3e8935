// JSON as Python's json.dumps writes it with ensure_ascii=False (transformers' tojson): ", " and
// ": " between items without indent, "," and ": " with it; non-ASCII text as is; control
// characters as \uXXXX except the short escapes; floats as Python's repr; NaN and Infinity as
// Python spells them.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/json_string.h"
#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

class JsonWriter {
public:
    JsonWriter(Interpreter& in, int indent, bool sort_keys) : in_(in), indent_(indent), sort_keys_(sort_keys) {}

    void write(const Value& v, int depth) {
        if (depth > kMaxNesting)
            throw TemplateLimitError("tojson: value nested deeper than " + std::to_string(kMaxNesting));
        switch (v.kind()) {
            case ValueKind::kNone:
                out_ += "null";
                return;
            case ValueKind::kBool:
                out_ += v.as_bool() ? "true" : "false";
                return;
            case ValueKind::kInt:
                out_ += std::to_string(v.as_int());
                return;
            case ValueKind::kFloat: {
                const double f = v.as_float();
                out_ += std::isnan(f)   ? "NaN"
                        : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity")
                                        : python_float_repr(f);
                return;
            }
            case ValueKind::kString:
                append_json_string(out_, v.as_string());
                in_.charge(v.as_string().size());
                return;
            case ValueKind::kList:
                write_list(v, depth);
                return;
            case ValueKind::kDict:
                write_dict(v, depth);
                return;
            default:
                throw TemplateError("Object of type " + std::string(v.type_name()) + " is not JSON serializable");
        }
    }

    std::string take() { return std::move(out_); }

private:
    void newline(int depth) {
        if (indent_ < 0) return;
        out_.push_back('\n');
        out_.append(static_cast<size_t>(indent_) * static_cast<size_t>(depth), ' ');
        in_.charge(static_cast<size_t>(indent_ * depth) + 1);
    }
    const char* separator() const { return indent_ < 0 ? ", " : ","; }

    void write_list(const Value& v, int depth) {
        const ValueList& items = v.items();
        if (items.empty()) {
            out_ += "[]";
            return;
        }
        out_.push_back('[');
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out_ += separator();
            newline(depth + 1);
            write(items[i], depth + 1);
        }
        newline(depth);
        out_.push_back(']');
    }

    void write_dict(const Value& v, int depth) {
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& e : v.dict_items().entries()) entries.push_back(&e);
        if (entries.empty()) {
            out_ += "{}";
            return;
        }
        if (sort_keys_) {
            std::stable_sort(entries.begin(), entries.end(),
                             [](auto* a, auto* b) { return compare_values(a->first, b->first, "<") < 0; });
        }
        out_.push_back('{');
        bool first = true;
        for (const auto* e : entries) {
            if (!first) out_ += separator();
            first = false;
            newline(depth + 1);
            write_key(e->first);
            out_ += ": ";
            write(e->second, depth + 1);
        }
        newline(depth);
        out_.push_back('}');
    }

    // json.dumps turns int, float, bool and None keys into strings.
    void write_key(const Value& k) {
        if (k.is_string()) return append_json_string(out_, k.as_string());
        if (k.is_none()) return append_json_string(out_, "null");
        if (k.is_bool()) return append_json_string(out_, k.as_bool() ? "true" : "false");
        if (k.is_int()) return append_json_string(out_, std::to_string(k.as_int()));
        if (k.is_float()) return append_json_string(out_, python_float_repr(k.as_float()));
        throw TemplateError("keys must be str, int, float, bool or None, not " + std::string(k.type_name()));
    }

    Interpreter& in_;
    int indent_;
    bool sort_keys_;
    std::string out_;
};

}  // namespace

std::string to_json(Interpreter& in, const Value& v, int indent, bool sort_keys) {
    JsonWriter w(in, indent, sort_keys);
    w.write(v, 0);
    return w.take();
}

}  // namespace lazyattn::tmpl
