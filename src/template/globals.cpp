// The functions every chat template can call: jinja2's range, namespace and dict, and the two
// transformers adds, raise_exception(message) and strftime_now(format).
#include <ctime>

#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

Value range(Interpreter& in, CallArgs& args) {
    std::vector<int64_t> a;
    for (const Value& v : args.positional) {
        if (!v.is_int() && !v.is_bool())
            throw TemplateError("range() takes integers, not " + std::string(v.type_name()));
        a.push_back(v.as_int());
    }
    if (a.empty() || a.size() > 3 || !args.keyword.empty()) throw TemplateError("range() takes 1 to 3 integers");
    const int64_t start = a.size() == 1 ? 0 : a[0];
    const int64_t stop = a.size() == 1 ? a[0] : a[1];
    const int64_t step = a.size() == 3 ? a[2] : 1;
    if (step == 0) throw TemplateError("range() step must not be zero");
    // Length without overflow, as jinja2's sandbox checks it before building anything.
    const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
    const __int128 magnitude = step > 0 ? step : -static_cast<__int128>(step);
    const __int128 length = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
    if (length > in.limits().max_range)
        throw TemplateLimitError("range too big: ranges longer than " + std::to_string(in.limits().max_range) +
                                 " items are refused");
    ValueList items;
    for (int64_t i = 0; i < static_cast<int64_t>(length); ++i) {
        in.count_iteration();
        items.emplace_back(start + i * step);
    }
    return Value::list(std::move(items));
}

Value make_namespace(Interpreter&, CallArgs& args) {
    Value ns = Value::namespace_object();
    for (const Value& v : args.positional) {
        if (!v.is_dict()) throw TemplateError("namespace() takes a dict or keyword arguments");
        for (const auto& [k, x] : v.dict_items().entries()) ns.dict_items().set(k, x);
    }
    for (const auto& [k, v] : args.keyword) ns.dict_items().set(Value(k), v);
    return ns;
}

Value make_dict(Interpreter&, CallArgs& args) {
    Value d = Value::dict();
    for (const Value& v : args.positional) {
        if (!v.is_dict()) throw TemplateError("dict() takes a dict or keyword arguments");
        for (const auto& [k, x] : v.dict_items().entries()) d.dict_items().set(k, x);
    }
    for (const auto& [k, v] : args.keyword) d.dict_items().set(Value(k), v);
    return d;
}

Value raise_exception(Interpreter& in, CallArgs& args) {
    const Value* message = find_arg(args, 0, "message");
    throw TemplateError("the template raised an exception: " + (message ? in.str(*message) : std::string()));
}

Value strftime_now(Interpreter& in, CallArgs& args) {
    const Value* format = find_arg(args, 0, "format");
    if (!format || !format->is_string()) throw TemplateError("strftime_now() needs a format string");
    if (format->as_string().size() > 256) throw TemplateError("strftime_now(): format longer than 256 bytes");
    const std::time_t now = in.now();
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[4096];
    const size_t n = std::strftime(buf, sizeof(buf), format->as_string().c_str(), &tm);
    return Value(std::string(buf, n));
}

}  // namespace

Value make_globals() {
    Value g = Value::dict();
    ValueDict& d = g.dict_items();
    d.set("range", Value::callable("range", range));
    d.set("namespace", Value::callable("namespace", make_namespace));
    d.set("dict", Value::callable("dict", make_dict));
    d.set("raise_exception", Value::callable("raise_exception", raise_exception));
    d.set("strftime_now", Value::callable("strftime_now", strftime_now));
    return g;
}

}  // namespace lazyattn::tmpl
