#include "template/value.h"

namespace lazyattn::tmpl {

Value Value::list(ValueList items, bool tuple) {
    Value v(ValueKind::kList);
    v.tuple_ = tuple;
    v.list_ = std::make_shared<ValueList>(std::move(items));
    return v;
}

Value Value::dict() {
    Value v(ValueKind::kDict);
    v.dict_ = std::make_shared<ValueDict>();
    return v;
}

Value Value::namespace_object() {
    Value v(ValueKind::kNamespace);
    v.dict_ = std::make_shared<ValueDict>();
    return v;
}

Value Value::callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn) {
    Value v(ValueKind::kCallable);
    v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
    return v;
}

bool Value::same_object(const Value& other) const {
    if (kind_ != other.kind_) return false;
    switch (kind_) {
        case ValueKind::kUndefined:
        case ValueKind::kNone:
            return true;
        case ValueKind::kBool:
            return int_ == other.int_;
        case ValueKind::kList:
            return list_ == other.list_;
        case ValueKind::kDict:
        case ValueKind::kNamespace:
            return dict_ == other.dict_;
        case ValueKind::kCallable:
            return fn_ == other.fn_;
        default:
            // Python interns small ints and some strings; `is` on them is not something templates
            // can rely on, so equal values count as the same object.
            return values_equal(*this, other);
    }
}

bool Value::truthy() const {
    switch (kind_) {
        case ValueKind::kUndefined:
        case ValueKind::kNone:
            return false;
        case ValueKind::kBool:
        case ValueKind::kInt:
            return int_ != 0;
        case ValueKind::kFloat:
            return float_ != 0.0;
        case ValueKind::kString:
            return !str_->empty();
        case ValueKind::kList:
            return !list_->empty();
        case ValueKind::kDict:
            return dict_->size() != 0;
        case ValueKind::kNamespace:
        case ValueKind::kCallable:
            return true;
    }
    return false;
}

const char* Value::type_name() const {
    switch (kind_) {
        case ValueKind::kUndefined:
            return "Undefined";
        case ValueKind::kNone:
            return "NoneType";
        case ValueKind::kBool:
            return "bool";
        case ValueKind::kInt:
            return "int";
        case ValueKind::kFloat:
            return "float";
        case ValueKind::kString:
            return "str";
        case ValueKind::kList:
            return tuple_ ? "tuple" : "list";
        case ValueKind::kDict:
            return "dict";
        case ValueKind::kNamespace:
            return "Namespace";
        case ValueKind::kCallable:
            return "function";
    }
    return "object";
}

const Value* ValueDict::find(const Value& key) const {
    for (const auto& [k, v] : entries_) {
        if (values_equal(k, key)) return &v;
    }
    return nullptr;
}

Value* ValueDict::find(const Value& key) {
    for (auto& [k, v] : entries_) {
        if (values_equal(k, key)) return &v;
    }
    return nullptr;
}

void ValueDict::set(Value key, Value value) {
    if (Value* existing = find(key)) {
        *existing = std::move(value);
        return;
    }
    entries_.emplace_back(std::move(key), std::move(value));
}

bool values_equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case ValueKind::kUndefined:
        case ValueKind::kNone:
            return true;
        case ValueKind::kString:
            return a.as_string() == b.as_string();
        case ValueKind::kList: {
            if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
            for (size_t i = 0; i < a.items().size(); ++i) {
                if (!values_equal(a.items()[i], b.items()[i])) return false;
            }
            return true;
        }
        case ValueKind::kDict: {
            if (a.dict_items().size() != b.dict_items().size()) return false;
            for (const auto& [k, v] : a.dict_items().entries()) {
                const Value* other = b.dict_items().find(k);
                if (!other || !values_equal(v, *other)) return false;
            }
            return true;
        }
        default:
            return a.same_object(b);
    }
}

}  // namespace lazyattn::tmpl
