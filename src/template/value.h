// The values a template computes with: Python's object model cut down to what chat templates use.
// Lists, dicts and namespaces are shared by reference (as in Python: `ns.x = ...` changes the one
// namespace every name refers to); strings are immutable and shared, so copying a Value is cheap
// however long the message it holds. Undefined carries the expression that produced it, for the
// error raised when it is used as more than an empty string.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lazyattn::tmpl {

class Value;
class Interpreter;

using ValueList = std::vector<Value>;

// A call's arguments: positional, then keyword in the order written.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// A built-in function, bound method or macro.
struct Callable {
    std::string name;
    std::function<Value(Interpreter&, CallArgs&)> call;
};

class ValueDict;

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

class Value {
public:
    Value() = default;  // undefined
    static Value undefined(std::string what) {
        Value v;
        v.str_ = std::make_shared<const std::string>(std::move(what));
        return v;
    }
    static Value none() { return Value(ValueKind::kNone); }
    Value(bool b) : kind_(ValueKind::kBool), int_(b) {}       // NOLINT: literals convert implicitly
    Value(int v) : kind_(ValueKind::kInt), int_(v) {}         // NOLINT
    Value(int64_t v) : kind_(ValueKind::kInt), int_(v) {}     // NOLINT
    Value(double v) : kind_(ValueKind::kFloat), float_(v) {}  // NOLINT
    Value(std::string s)
        : kind_(ValueKind::kString), str_(std::make_shared<const std::string>(std::move(s))) {}  // NOLINT
    Value(std::string_view s) : Value(std::string(s)) {}                                         // NOLINT
    Value(const char* s) : Value(std::string(s)) {}                                              // NOLINT
    static Value list(ValueList items = {}, bool tuple = false);
    static Value dict();
    static Value namespace_object();
    static Value callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn);

    ValueKind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
    bool is_none() const { return kind_ == ValueKind::kNone; }
    bool is_bool() const { return kind_ == ValueKind::kBool; }
    bool is_int() const { return kind_ == ValueKind::kInt; }
    bool is_float() const { return kind_ == ValueKind::kFloat; }
    bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
    bool is_string() const { return kind_ == ValueKind::kString; }
    bool is_list() const { return kind_ == ValueKind::kList; }
    bool is_tuple() const { return is_list() && tuple_; }
    bool is_dict() const { return kind_ == ValueKind::kDict; }
    bool is_namespace() const { return kind_ == ValueKind::kNamespace; }
    bool is_mapping_like() const { return is_dict() || is_namespace(); }
    bool is_callable() const { return kind_ == ValueKind::kCallable; }

    bool as_bool() const { return int_ != 0; }
    int64_t as_int() const { return int_; }  // ints and bools
    double as_float() const { return is_float() ? float_ : static_cast<double>(int_); }
    // Strings; for undefined, what it was ("'x' is undefined").
    const std::string& as_string() const {
        static const std::string kUnknown = "undefined value";
        return str_ ? *str_ : kUnknown;
    }
    ValueList& items() const { return *list_; }
    ValueDict& dict_items() const { return *dict_; }
    const Callable& function() const { return *fn_; }
    bool same_object(const Value& other) const;  // Python's `is`

    // Python's bool(): empty strings/lists/dicts, 0, None and undefined are false.
    bool truthy() const;
    // Python's type name ("str", "dict", ...) for error messages.
    const char* type_name() const;

private:
    explicit Value(ValueKind kind) : kind_(kind) {}

    ValueKind kind_ = ValueKind::kUndefined;
    bool tuple_ = false;
    int64_t int_ = 0;
    double float_ = 0;
    std::shared_ptr<const std::string> str_;
    std::shared_ptr<ValueList> list_;
    std::shared_ptr<ValueDict> dict_;
    std::shared_ptr<Callable> fn_;
};

// An insertion-ordered mapping (Python 3.7+ dicts keep insertion order, and templates that print
// or serialise a dict depend on it). Keys compare with Python's ==.
class ValueDict {
public:
    const Value* find(const Value& key) const;
    Value* find(const Value& key);
    void set(Value key, Value value);
    size_t size() const { return entries_.size(); }
    const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }

private:
    std::vector<std::pair<Value, Value>> entries_;
};

// Python's == (1 == 1.0 == True; lists and dicts element by element; undefined equals undefined).
bool values_equal(const Value& a, const Value& b);

}  // namespace lazyattn::tmpl
