// Jinja's list and dict filters (jinja2 3.1 behaviour): length, first/last, join, map, select and
// selectattr families, sort, unique, dictsort, items, ... Attribute paths ("a.b", "0") resolve as
// jinja2's attrgetter does: item first, then attribute.
#include <algorithm>

#include "template/builtins.h"
#include "template/filters.h"
#include "template/interpreter.h"
#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

Value attribute_path(Interpreter& in, const Value& v, const std::string& path) {
    Value cur = v;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool digits =
            !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        cur = digits && part.size() < 18 ? in.getitem(cur, Value(static_cast<int64_t>(std::stoll(part))))
                                         : in.getitem(cur, Value(part));
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

// The sort key jinja2's sort/unique/dictsort/min/max use: strings lower-cased unless case-sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
    return !case_sensitive && v.is_string() ? Value(ascii_lower(v.as_string())) : v;
}

ValueList sorted(ValueList items, const std::vector<Value>& keys, bool reverse) {
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return reverse ? compare_values(keys[b], keys[a], "<") < 0 : compare_values(keys[a], keys[b], "<") < 0;
    });
    ValueList out;
    for (size_t i : order) out.push_back(items[i]);
    return out;
}

Value filter_length(Interpreter&, const Value& v, CallArgs&) {
    if (v.is_undefined()) return Value(0);
    if (v.is_string()) return Value(static_cast<int64_t>(code_point_length(v.as_string())));
    if (v.is_list()) return Value(static_cast<int64_t>(v.items().size()));
    if (v.is_dict()) return Value(static_cast<int64_t>(v.dict_items().size()));
    throw TemplateError("object of type '" + std::string(v.type_name()) + "' has no len()");
}

Value filter_join(Interpreter& in, const Value& v, CallArgs& args) {
    const std::string* sep = string_arg(args, 0, "d");
    const std::string* attribute = string_arg(args, 1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : in.iterate(v)) {
        in.count_iteration();
        if (!first && sep) out += *sep;
        first = false;
        out += in.str(attribute ? attribute_path(in, item, *attribute) : item);
        in.charge(out.size() / 16 + 1);
    }
    return Value(out);
}

// map, select and their kin yield nothing for a false value (None, empty) rather than iterating it,
// as jinja2's generators do.
Value filter_map(Interpreter& in, const Value& v, CallArgs& args) {
    ValueList out;
    if (!v.truthy()) return Value::list();
    if (const std::string* attribute = string_arg(args, 99, "attribute")) {
        const Value* fallback = find_arg(args, 99, "default");
        for (const Value& item : in.iterate(v)) {
            in.count_iteration();
            Value x = attribute_path(in, item, *attribute);
            out.push_back(x.is_undefined() && fallback ? *fallback : x);
        }
        return Value::list(std::move(out));
    }
    if (args.positional.empty() || !args.positional[0].is_string())
        throw TemplateError("map() needs a filter name or attribute=");
    const std::string name = args.positional[0].as_string();
    if (!is_filter_name(name)) throw TemplateError("no filter named '" + name + "'");
    CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.keyword};
    for (const Value& item : in.iterate(v)) {
        in.count_iteration();
        CallArgs each = rest;
        out.push_back(apply_filter(in, name, item, each));
    }
    return Value::list(std::move(out));
}

// select/reject (attribute empty) and selectattr/rejectattr.
Value select_items(Interpreter& in, const Value& v, CallArgs& args, bool by_attribute, bool keep) {
    if (!v.truthy()) return Value::list();
    size_t next = 0;
    std::string attribute;
    if (by_attribute) {
        if (args.positional.empty() || !args.positional[0].is_string())
            throw TemplateError("selectattr() needs an attribute name");
        attribute = args.positional[next++].as_string();
    }
    std::string test;
    if (next < args.positional.size()) {
        if (!args.positional[next].is_string()) throw TemplateError("the test name must be a string");
        test = args.positional[next++].as_string();
        if (!is_test_name(test)) throw TemplateError("no test named '" + test + "'");
    }
    CallArgs test_args{{args.positional.begin() + static_cast<ptrdiff_t>(next), args.positional.end()}, args.keyword};
    ValueList out;
    for (const Value& item : in.iterate(v)) {
        in.count_iteration();
        const Value subject = by_attribute ? attribute_path(in, item, attribute) : item;
        CallArgs each = test_args;
        const bool pass = test.empty() ? subject.truthy() : apply_test(in, test, subject, each);
        if (pass == keep) out.push_back(item);
    }
    return Value::list(std::move(out));
}

Value filter_sort(Interpreter& in, const Value& v, CallArgs& args) {
    const bool reverse = bool_arg(args, 0, "reverse", false);
    const bool case_sensitive = bool_arg(args, 1, "case_sensitive", false);
    const std::string* attribute = string_arg(args, 2, "attribute");
    ValueList items = in.iterate(v);
    std::vector<Value> keys;
    for (const Value& item : items) {
        in.count_iteration();
        keys.push_back(sort_key(attribute ? attribute_path(in, item, *attribute) : item, case_sensitive));
    }
    return Value::list(sorted(std::move(items), keys, reverse));
}

Value filter_unique(Interpreter& in, const Value& v, CallArgs& args) {
    const bool case_sensitive = bool_arg(args, 0, "case_sensitive", false);
    const std::string* attribute = string_arg(args, 1, "attribute");
    ValueList out, seen;
    for (const Value& item : in.iterate(v)) {
        const Value key = sort_key(attribute ? attribute_path(in, item, *attribute) : item, case_sensitive);
        bool dup = false;
        for (const Value& s : seen) {
            in.count_iteration();
            if (values_equal(s, key)) dup = true;
        }
        if (dup) continue;
        seen.push_back(key);
        out.push_back(item);
    }
    return Value::list(std::move(out));
}

Value filter_dictsort(Interpreter& in, const Value& v, CallArgs& args) {
    if (!v.is_dict()) throw TemplateError("dictsort() needs a dict, not " + std::string(v.type_name()));
    const bool case_sensitive = bool_arg(args, 0, "case_sensitive", false);
    const std::string* by = string_arg(args, 1, "by");
    const bool by_value = by && *by == "value";
    if (by && !by_value && *by != "key") throw TemplateError("dictsort: 'by' must be 'key' or 'value'");
    ValueList items;
    std::vector<Value> keys;
    for (const auto& [k, val] : v.dict_items().entries()) {
        in.count_iteration();
        items.push_back(Value::list({k, val}, true));
        keys.push_back(sort_key(by_value ? val : k, case_sensitive));
    }
    return Value::list(sorted(std::move(items), keys, bool_arg(args, 2, "reverse", false)));
}

Value filter_items(Interpreter& in, const Value& v, CallArgs&) {
    if (v.is_undefined()) return Value::list();
    if (!v.is_dict()) throw TemplateError("items() needs a mapping, not " + std::string(v.type_name()));
    ValueList out;
    for (const auto& [k, val] : v.dict_items().entries()) {
        in.count_iteration();
        out.push_back(Value::list({k, val}, true));
    }
    return Value::list(std::move(out));
}

Value filter_reverse(Interpreter& in, const Value& v, CallArgs&) {
    if (v.is_string()) {
        std::vector<char32_t> cps = to_code_points(v.as_string());
        std::reverse(cps.begin(), cps.end());
        return Value(from_code_points(cps, 0, cps.size()));
    }
    ValueList items = in.iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
}

Value extreme(Interpreter& in, const Value& v, CallArgs& args, bool want_max) {
    const bool case_sensitive = bool_arg(args, 0, "case_sensitive", false);
    const std::string* attribute = string_arg(args, 1, "attribute");
    Value best, best_key;
    for (const Value& item : in.iterate(v)) {
        in.count_iteration();
        Value key = sort_key(attribute ? attribute_path(in, item, *attribute) : item, case_sensitive);
        const int c = best.is_undefined() ? 0 : compare_values(key, best_key, want_max ? ">" : "<");
        if (best.is_undefined() || (want_max ? c > 0 : c < 0)) {
            best = item;
            best_key = key;
        }
    }
    return best.is_undefined()
               ? Value::undefined("no items to take the " + std::string(want_max ? "max" : "min") + " of")
               : best;
}

}  // namespace

void add_collection_filters(FilterTable& t) {
    t["length"] = filter_length;
    t["count"] = filter_length;
    t["join"] = filter_join;
    t["map"] = filter_map;
    t["select"] = [](Interpreter& in, const Value& v, CallArgs& a) { return select_items(in, v, a, false, true); };
    t["reject"] = [](Interpreter& in, const Value& v, CallArgs& a) { return select_items(in, v, a, false, false); };
    t["selectattr"] = [](Interpreter& in, const Value& v, CallArgs& a) { return select_items(in, v, a, true, true); };
    t["rejectattr"] = [](Interpreter& in, const Value& v, CallArgs& a) { return select_items(in, v, a, true, false); };
    t["sort"] = filter_sort;
    t["unique"] = filter_unique;
    t["dictsort"] = filter_dictsort;
    t["items"] = filter_items;
    t["reverse"] = filter_reverse;
    t["list"] = [](Interpreter& in, const Value& v, CallArgs&) { return Value::list(in.iterate(v)); };
    t["first"] = [](Interpreter& in, const Value& v, CallArgs&) {
        if (v.is_list())
            return v.items().empty() ? Value::undefined("no first item of an empty sequence") : v.items()[0];
        ValueList items = in.iterate(v);
        return items.empty() ? Value::undefined("no first item of an empty sequence") : items[0];
    };
    t["last"] = [](Interpreter& in, const Value& v, CallArgs&) {
        if (v.is_list())
            return v.items().empty() ? Value::undefined("no last item of an empty sequence") : v.items().back();
        if (!v.is_string()) throw TemplateError("last() needs a sequence, not " + std::string(v.type_name()));
        ValueList items = in.iterate(v);
        return items.empty() ? Value::undefined("no last item of an empty sequence") : items.back();
    };
    t["min"] = [](Interpreter& in, const Value& v, CallArgs& a) { return extreme(in, v, a, false); };
    t["max"] = [](Interpreter& in, const Value& v, CallArgs& a) { return extreme(in, v, a, true); };
    t["sum"] = [](Interpreter& in, const Value& v, CallArgs& args) {
        const std::string* attribute = string_arg(args, 0, "attribute");
        const Value* start = find_arg(args, 1, "start");
        Value total = start ? *start : Value(0);
        for (const Value& item : in.iterate(v)) {
            in.count_iteration();
            const Value x = attribute ? attribute_path(in, item, *attribute) : item;
            if (!x.is_number() || !total.is_number()) throw TemplateError("sum() can only add numbers");
            if (x.is_float() || total.is_float()) {
                total = Value(total.as_float() + x.as_float());
            } else {
                int64_t r;
                if (__builtin_add_overflow(total.as_int(), x.as_int(), &r)) throw TemplateError("integer overflow");
                total = Value(r);
            }
        }
        return total;
    };
    t["attr"] = [](Interpreter& in, const Value& v, CallArgs& args) {
        const std::string* name = string_arg(args, 0, "name");
        if (!name) throw TemplateError("attr() needs a name");
        return in.getattr(v, *name);
    };
}

namespace {

const FilterTable& filter_table() {
    static const FilterTable table = [] {
        FilterTable t;
        add_text_filters(t);
        add_collection_filters(t);
        return t;
    }();
    return table;
}

}  // namespace

bool is_filter_name(std::string_view name) { return filter_table().count(name) > 0; }

Value apply_filter(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args) {
    const auto it = filter_table().find(name);
    if (it == filter_table().end()) throw TemplateError("no filter named '" + name + "'");
    return it->second(in, subject, args);
}

}  // namespace lazyattn::tmpl
