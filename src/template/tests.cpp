// Jinja's tests (`x is defined`, `n is divisibleby 3`, ...) with jinja2 3.1's definitions: a bool
// is a number but not an integer; strings, lists, dicts and undefined are iterable and sequences.
#include <functional>
#include <map>

#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

using TestFn = std::function<bool(Interpreter&, const Value&, CallArgs&)>;

const Value& required_arg(const CallArgs& args, const char* test) {
    const Value* v = find_arg(args, 0, "other");
    if (!v) throw TemplateError(std::string("the '") + test + "' test needs an argument");
    return *v;
}

int64_t integer_subject(const Value& v, const char* test) {
    if (!v.is_int() && !v.is_bool()) throw TemplateError(std::string("the '") + test + "' test needs an integer");
    return v.as_int();
}

TestFn ordering(const char* op) {
    return [op](Interpreter&, const Value& v, CallArgs& args) {
        const int c = compare_values(v, required_arg(args, op), op);
        const std::string o = op;
        return o == "<" ? c < 0 : o == "<=" ? c <= 0 : o == ">" ? c > 0 : c >= 0;
    };
}

const std::map<std::string, TestFn, std::less<>>& test_table() {
    static const std::map<std::string, TestFn, std::less<>> table = [] {
        std::map<std::string, TestFn, std::less<>> t;
        t["defined"] = [](Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); };
        t["undefined"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); };
        t["none"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_none(); };
        t["string"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_string(); };
        t["number"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_number(); };
        t["integer"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_int(); };
        t["float"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_float(); };
        t["boolean"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); };
        t["true"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); };
        t["false"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); };
        t["mapping"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); };
        t["iterable"] = [](Interpreter&, const Value& v, CallArgs&) {
            return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
        };
        t["sequence"] = t["iterable"];
        t["callable"] = [](Interpreter&, const Value& v, CallArgs&) { return v.is_callable(); };
        t["sameas"] = [](Interpreter&, const Value& v, CallArgs& args) {
            return v.same_object(required_arg(args, "sameas"));
        };
        t["equalto"] = [](Interpreter&, const Value& v, CallArgs& args) {
            return values_equal(v, required_arg(args, "equalto"));
        };
        t["eq"] = t["=="] = t["equalto"];
        t["ne"] = t["!="] = [](Interpreter&, const Value& v, CallArgs& args) {
            return !values_equal(v, required_arg(args, "ne"));
        };
        t["lt"] = t["lessthan"] = t["<"] = ordering("<");
        t["le"] = t["<="] = ordering("<=");
        t["gt"] = t["greaterthan"] = t[">"] = ordering(">");
        t["ge"] = t[">="] = ordering(">=");
        t["in"] = [](Interpreter&, const Value& v, CallArgs& args) {
            return value_contains(required_arg(args, "in"), v);
        };
        t["odd"] = [](Interpreter&, const Value& v, CallArgs&) { return integer_subject(v, "odd") % 2 != 0; };
        t["even"] = [](Interpreter&, const Value& v, CallArgs&) { return integer_subject(v, "even") % 2 == 0; };
        t["divisibleby"] = [](Interpreter&, const Value& v, CallArgs& args) {
            const int64_t d = integer_subject(required_arg(args, "divisibleby"), "divisibleby");
            if (d == 0) throw TemplateError("integer division or modulo by zero");
            return d == -1 || integer_subject(v, "divisibleby") % d == 0;
        };
        t["lower"] = [](Interpreter&, const Value& v, CallArgs&) {
            return v.is_string() && ascii_lower(v.as_string()) == v.as_string();
        };
        t["upper"] = [](Interpreter&, const Value& v, CallArgs&) {
            return v.is_string() && ascii_upper(v.as_string()) == v.as_string();
        };
        t["escaped"] = [](Interpreter&, const Value&, CallArgs&) { return false; };
        return t;
    }();
    return table;
}

}  // namespace

bool is_test_name(std::string_view name) { return test_table().count(name) > 0; }

bool apply_test(Interpreter& in, const std::string& name, const Value& subject, CallArgs& args) {
    const auto it = test_table().find(name);
    if (it == test_table().end()) throw TemplateError("no test named '" + name + "'");
    return it->second(in, subject, args);
}

}  // namespace lazyattn::tmpl
