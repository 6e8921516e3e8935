// The expressions half of Interpreter (interpreter_statements.cpp has the statements): Python's
// operators, attribute and item access, slicing, calls, the work and iteration meters.
#include "template/interpreter.h"

#include <cmath>

#include "template/builtins.h"
#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

[[noreturn]] void fail_undefined(const Value& v) { throw TemplateError(v.as_string()); }

void require_defined(const Value& v) {
    if (v.is_undefined()) fail_undefined(v);
}

[[noreturn]] void overflow() { throw TemplateError("integer overflow (values beyond 64 bits are not supported)"); }

int64_t checked_add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) overflow();
    return r;
}

int64_t checked_sub(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) overflow();
    return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) overflow();
    return r;
}

int64_t floor_div(int64_t a, int64_t b) {
    if (b == 0) throw TemplateError("integer division or modulo by zero");
    if (a == INT64_MIN && b == -1) overflow();
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
    if (b == 0) throw TemplateError("integer division or modulo by zero");
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

double float_mod(double a, double b) {
    if (b == 0) throw TemplateError("float modulo by zero");
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
    throw TemplateError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() +
                        "'");
}

int64_t int_power(int64_t base, int64_t exp) {
    int64_t result = 1;
    while (exp > 0) {
        if (exp & 1) result = checked_mul(result, base);
        exp >>= 1;
        if (exp) base = checked_mul(base, base);
    }
    return result;
}

// Python's printf-style "%s" % args, for the conversions templates use (%s %d %i %r %%).
std::string percent_format(Interpreter& in, const std::string& fmt, const Value& args) {
    ValueList values = args.is_tuple() ? args.items() : ValueList{args};
    std::string out;
    size_t next = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out.push_back(fmt[i]);
            continue;
        }
        if (++i == fmt.size()) throw TemplateError("incomplete format");
        const char c = fmt[i];
        if (c == '%') {
            out.push_back('%');
            continue;
        }
        if (next >= values.size()) throw TemplateError("not enough arguments for format string");
        const Value& v = values[next++];
        if (c == 's') {
            out += in.str(v);
        } else if (c == 'r') {
            out += python_repr(v);
        } else if (c == 'd' || c == 'i') {
            if (!v.is_number())
                throw TemplateError("%d format: a real number is required, not " + std::string(v.type_name()));
            out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_float()) : v.as_int());
        } else {
            throw TemplateError(std::string("unsupported format character '") + c + "'");
        }
        in.charge(out.size());
    }
    if (next < values.size()) throw TemplateError("not all arguments converted during string formatting");
    return out;
}

}  // namespace

int compare_values(const Value& a, const Value& b, const std::string& op) {
    require_defined(a);
    require_defined(b);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() < b.as_float() ? -1 : a.as_float() > b.as_float() ? 1 : 0;
        return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
    if (a.is_string() && b.is_string())
        return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
    if (a.is_list() && b.is_list()) {
        const ValueList &x = a.items(), &y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (values_equal(x[i], y[i])) continue;
            return compare_values(x[i], y[i], op);
        }
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    throw TemplateError("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" +
                        b.type_name() + "'");
}

bool value_contains(const Value& container, const Value& item) {
    if (container.is_undefined()) return false;
    if (container.is_string()) {
        if (!item.is_string())
            throw TemplateError("'in <string>' requires string as left operand, not " + std::string(item.type_name()));
        return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_list()) {
        for (const Value& v : container.items()) {
            if (values_equal(v, item)) return true;
        }
        return false;
    }
    if (container.is_dict()) return container.dict_items().find(item) != nullptr;
    throw TemplateError("argument of type '" + std::string(container.type_name()) + "' is not iterable");
}

void Interpreter::charge(size_t bytes) {
    work_bytes_ += bytes;
    if (work_bytes_ > limits_.max_work_bytes)
        throw TemplateLimitError("the template built more than " + std::to_string(limits_.max_work_bytes >> 20) +
                                 " MiB of text");
}

void Interpreter::count_iteration() {
    if (++iterations_ > limits_.max_loop_iterations)
        throw TemplateLimitError("more than " + std::to_string(limits_.max_loop_iterations) + " loop iterations");
}

std::string Interpreter::str(const Value& v) {
    std::string s = python_str(v);
    charge(s.size());
    return s;
}

void Interpreter::write(std::string_view text) {
    charge(text.size());
    if (out_->size() + text.size() > limits_.max_output_bytes)
        throw TemplateLimitError("the rendered text exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
    out_->append(text);
}

Value Interpreter::lookup(const std::string& name) const {
    for (const Frame* f = frame_.get(); f; f = f->parent.get()) {
        auto it = f->vars.find(name);
        if (it != f->vars.end()) return it->second;
    }
    return Value::undefined("'" + name + "' is undefined");
}

std::string Interpreter::render(const Body& body, const Value& context) {
    auto globals = std::make_shared<Frame>();
    const Value builtins = make_globals();
    for (const auto& [k, v] : builtins.dict_items().entries()) globals->vars[k.as_string()] = v;
    auto vars = std::make_shared<Frame>();
    vars->parent = globals;
    if (context.is_dict()) {
        for (const auto& [k, v] : context.dict_items().entries()) {
            if (k.is_string()) vars->vars[k.as_string()] = v;
        }
    }
    frame_ = std::make_shared<Frame>();
    frame_->parent = vars;
    std::string out;
    out_ = &out;
    execute(body);
    return out;
}

// --- values ---

Value Interpreter::getattr(const Value& obj, const std::string& name) {
    require_defined(obj);
    if (obj.is_namespace()) {
        if (const Value* v = obj.dict_items().find(Value(name))) return *v;
        return Value::undefined("'Namespace' object has no attribute '" + name + "'");
    }
    Value method = find_method(obj, name);
    if (!method.is_undefined()) return method;
    if (obj.is_dict()) {
        if (const Value* v = obj.dict_items().find(Value(name))) return *v;
    }
    return Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute '" + name + "'");
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
    require_defined(obj);
    if (obj.is_dict() || obj.is_namespace()) {
        if (const Value* v = obj.dict_items().find(key)) return *v;
        if (key.is_string()) return getattr(obj, key.as_string());
        return Value::undefined("'" + std::string(obj.type_name()) + " object' has no element " + python_repr(key));
    }
    if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
        int64_t i = key.as_int();
        if (obj.is_list()) {
            const int64_t n = static_cast<int64_t>(obj.items().size());
            if (i < 0) i += n;
            if (i < 0 || i >= n)
                return Value::undefined("list index " + std::to_string(key.as_int()) + " out of range");
            return obj.items()[static_cast<size_t>(i)];
        }
        const std::vector<char32_t> cps = to_code_points(obj.as_string());
        const int64_t n = static_cast<int64_t>(cps.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined("string index " + std::to_string(key.as_int()) + " out of range");
        return Value(from_code_points(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
    }
    if (key.is_string()) return getattr(obj, key.as_string());
    return Value::undefined("'" + std::string(obj.type_name()) + " object' has no element " + python_repr(key));
}

ValueList Interpreter::iterate(const Value& v) {
    if (v.is_undefined()) return {};
    if (v.is_list()) return v.items();
    if (v.is_dict()) {
        ValueList keys;
        for (const auto& [k, _] : v.dict_items().entries()) keys.push_back(k);
        return keys;
    }
    if (v.is_string()) {
        const std::vector<char32_t> cps = to_code_points(v.as_string());
        ValueList chars;
        for (size_t i = 0; i < cps.size(); ++i) chars.emplace_back(from_code_points(cps, i, i + 1));
        return chars;
    }
    throw TemplateError("'" + std::string(v.type_name()) + "' object is not iterable");
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
    require_defined(fn);
    if (!fn.is_callable()) throw TemplateError("'" + std::string(fn.type_name()) + "' object is not callable");
    return fn.function().call(*this, args);
}

// --- expressions ---

CallArgs Interpreter::eval_args(const Expr& e, size_t first_child) {
    CallArgs args;
    for (size_t i = first_child; i < e.children.size(); ++i) args.positional.push_back(eval(*e.children[i]));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v));
    return args;
}

Value Interpreter::eval(const Expr& e) {
    try {
        switch (e.kind) {
            case ExprKind::kLiteral:
                return e.literal;
            case ExprKind::kName:
                return lookup(e.name);
            case ExprKind::kList:
            case ExprKind::kTuple: {
                ValueList items;
                for (const auto& c : e.children) items.push_back(eval(*c));
                return Value::list(std::move(items), e.kind == ExprKind::kTuple);
            }
            case ExprKind::kDict: {
                Value d = Value::dict();
                for (size_t i = 0; i + 1 < e.children.size(); i += 2)
                    d.dict_items().set(eval(*e.children[i]), eval(*e.children[i + 1]));
                return d;
            }
            case ExprKind::kGetAttr:
                return getattr(eval(*e.children[0]), e.name);
            case ExprKind::kGetItem: {
                Value obj = eval(*e.children[0]);
                return getitem(obj, eval(*e.children[1]));
            }
            case ExprKind::kSlice:
                return eval_slice(e);
            case ExprKind::kCall:
                return eval_call(e);
            case ExprKind::kFilter:
                return eval_filter(e, nullptr);
            case ExprKind::kTest: {
                Value subject = eval(*e.children[0]);
                CallArgs args = eval_args(e, 1);
                return Value(apply_test(*this, e.name, subject, args) != e.negated);
            }
            case ExprKind::kNeg:
            case ExprKind::kPos: {
                Value v = eval(*e.children[0]);
                require_defined(v);
                if (!v.is_number())
                    throw TemplateError("bad operand type for unary " +
                                        std::string(e.kind == ExprKind::kNeg ? "-" : "+") + ": '" + v.type_name() +
                                        "'");
                if (e.kind == ExprKind::kPos) return v.is_bool() ? Value(v.as_int()) : v;
                if (v.is_float()) return Value(-v.as_float());
                if (v.as_int() == INT64_MIN) overflow();
                return Value(-v.as_int());
            }
            case ExprKind::kNot:
                return Value(!eval(*e.children[0]).truthy());
            case ExprKind::kAnd: {
                Value left = eval(*e.children[0]);
                return left.truthy() ? eval(*e.children[1]) : left;
            }
            case ExprKind::kOr: {
                Value left = eval(*e.children[0]);
                return left.truthy() ? left : eval(*e.children[1]);
            }
            case ExprKind::kBinary:
                return eval_binary(e);
            case ExprKind::kCompare:
                return eval_compare(e);
            case ExprKind::kConcat: {
                std::string out;
                for (const auto& c : e.children) {
                    out += str(eval(*c));
                    charge(out.size());
                }
                return Value(std::move(out));
            }
            case ExprKind::kCondition:
                if (eval(*e.children[0]).truthy()) return eval(*e.children[1]);
                return e.children[2] ? eval(*e.children[2])
                                     : Value::undefined("the condition was false and there is no else");
        }
    } catch (TemplateError& err) {
        err.set_line_if_unknown(e.line);
        throw;
    }
    return {};
}

Value Interpreter::eval_binary(const Expr& e) {
    Value a = eval(*e.children[0]);
    Value b = eval(*e.children[1]);
    // A string plus an undefined variable is the string: Jinja prints an undefined variable as ""
    // and llama.cpp's template engine concatenates it so, which chat templates written for it rely
    // on (firefunction-v2 adds `functions`, set only when a request has tools). Any other use of
    // an undefined value (arithmetic, a list, its attributes) stays an error naming it.
    if (e.name == "+" && ((a.is_string() && b.is_undefined()) || (a.is_undefined() && b.is_string()))) {
        return a.is_string() ? a : b;
    }
    require_defined(a);
    require_defined(b);
    const std::string& op = e.name;
    const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
    const bool numbers = a.is_number() && b.is_number();
    if (op == "+") {
        if (ints) return Value(checked_add(a.as_int(), b.as_int()));
        if (numbers) return Value(a.as_float() + b.as_float());
        if (a.is_string() && b.is_string()) {
            charge(a.as_string().size() + b.as_string().size());
            return Value(a.as_string() + b.as_string());
        }
        if (a.is_list() && b.is_list()) {
            ValueList items = a.items();
            for (const Value& v : b.items()) {
                count_iteration();
                items.push_back(v);
            }
            return Value::list(std::move(items), a.is_tuple());
        }
        bad_operands(op, a, b);
    }
    if (op == "-") {
        if (ints) return Value(checked_sub(a.as_int(), b.as_int()));
        if (numbers) return Value(a.as_float() - b.as_float());
        bad_operands(op, a, b);
    }
    if (op == "*") {
        if (ints) return Value(checked_mul(a.as_int(), b.as_int()));
        if (numbers) return Value(a.as_float() * b.as_float());
        const Value& seq = a.is_number() ? b : a;
        const Value& count = a.is_number() ? a : b;
        if ((count.is_int() || count.is_bool()) && (seq.is_string() || seq.is_list())) {
            const int64_t n = std::max<int64_t>(0, count.as_int());
            if (seq.is_string()) {
                const size_t len = seq.as_string().size();
                if (len && static_cast<uint64_t>(n) > limits_.max_output_bytes / len)
                    throw TemplateLimitError("string repetition beyond " + std::to_string(limits_.max_output_bytes) +
                                             " bytes");
                charge(len * static_cast<size_t>(n));
                std::string out;
                for (int64_t i = 0; i < n; ++i) out += seq.as_string();
                return Value(std::move(out));
            }
            ValueList items;
            for (int64_t i = 0; i < n && !seq.items().empty(); ++i) {
                for (const Value& v : seq.items()) {
                    count_iteration();
                    items.push_back(v);
                }
            }
            return Value::list(std::move(items), seq.is_tuple());
        }
        bad_operands(op, a, b);
    }
    if (op == "/") {
        if (!numbers) bad_operands(op, a, b);
        if (b.as_float() == 0) throw TemplateError("division by zero");
        return Value(a.as_float() / b.as_float());
    }
    if (op == "//") {
        if (ints) return Value(floor_div(a.as_int(), b.as_int()));
        if (!numbers) bad_operands(op, a, b);
        if (b.as_float() == 0) throw TemplateError("float floor division by zero");
        return Value(std::floor(a.as_float() / b.as_float()));
    }
    if (op == "%") {
        if (a.is_string()) return Value(percent_format(*this, a.as_string(), b));
        if (ints) return Value(floor_mod(a.as_int(), b.as_int()));
        if (!numbers) bad_operands(op, a, b);
        return Value(float_mod(a.as_float(), b.as_float()));
    }
    if (op == "**") {
        if (ints && b.as_int() >= 0) return Value(int_power(a.as_int(), b.as_int()));
        if (!numbers) bad_operands(op, a, b);
        return Value(std::pow(a.as_float(), b.as_float()));
    }
    throw TemplateError("unknown operator " + op);
}

Value Interpreter::eval_compare(const Expr& e) {
    Value left = eval(*e.children[0]);
    for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.children[i + 1]);
        const std::string& op = e.ops[i];
        bool ok;
        if (op == "==") {
            ok = values_equal(left, right);
        } else if (op == "!=") {
            ok = !values_equal(left, right);
        } else if (op == "in" || op == "notin") {
            ok = value_contains(right, left) == (op == "in");
        } else {
            const int c = compare_values(left, right, op);
            ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
        }
        if (!ok) return Value(false);
        left = std::move(right);
    }
    return Value(true);
}

Value Interpreter::eval_slice(const Expr& e) {
    Value obj = eval(*e.children[0]);
    require_defined(obj);
    int64_t bounds[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
        if (!e.children[k + 1]) continue;
        Value v = eval(*e.children[k + 1]);
        if (v.is_none()) continue;
        if (!v.is_int() && !v.is_bool()) throw TemplateError("slice indices must be integers or None");
        bounds[k] = v.as_int();
        given[k] = true;
    }
    const int64_t step = bounds[2];
    if (step == 0) throw TemplateError("slice step cannot be zero");
    std::vector<char32_t> cps;
    int64_t n;
    if (obj.is_string()) {
        cps = to_code_points(obj.as_string());
        n = static_cast<int64_t>(cps.size());
    } else if (obj.is_list()) {
        n = static_cast<int64_t>(obj.items().size());
    } else {
        throw TemplateError("'" + std::string(obj.type_name()) + "' object is not subscriptable");
    }
    // Python's slice.indices.
    auto clamp = [&](int64_t i, bool is_given, int64_t dflt) {
        if (!is_given) return dflt;
        if (i < 0) i += n;
        if (step > 0) return std::clamp<int64_t>(i, 0, n);
        return std::clamp<int64_t>(i, -1, n - 1);
    };
    const int64_t start = clamp(bounds[0], given[0], step > 0 ? 0 : n - 1);
    const int64_t stop = clamp(bounds[1], given[1], step > 0 ? n : -1);
    std::vector<int64_t> picked;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picked.push_back(i);
    if (obj.is_string()) {
        std::vector<char32_t> out;
        for (int64_t i : picked) out.push_back(cps[static_cast<size_t>(i)]);
        charge(out.size());
        return Value(from_code_points(out, 0, out.size()));
    }
    ValueList items;
    for (int64_t i : picked) items.push_back(obj.items()[static_cast<size_t>(i)]);
    return Value::list(std::move(items), obj.is_tuple());
}

Value Interpreter::eval_call(const Expr& e) {
    Value fn = eval(*e.children[0]);
    CallArgs args = eval_args(e, 1);
    return call(fn, args);
}

Value Interpreter::eval_filter(const Expr& e, const Value* block_input) {
    Value subject = block_input ? *block_input : eval(*e.children[0]);
    CallArgs args = eval_args(e, 1);
    try {
        return apply_filter(*this, e.name, subject, args);
    } catch (TemplateError& err) {
        err.set_line_if_unknown(e.line);
        throw;
    }
}

}  // namespace lazyattn::tmpl
