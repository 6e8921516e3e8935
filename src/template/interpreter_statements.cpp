// The statements half of Interpreter: output, if, for (a frame per iteration, the loop object),
// set (names, namespace attributes, unpacking, blocks), macros and call blocks, filter blocks.
#include <algorithm>

#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {

// --- statements ---

Interpreter::Flow Interpreter::execute(const Body& body) {
    for (const StmtPtr& s : body) {
        const Flow flow = execute_one(*s);
        if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
}

std::string Interpreter::capture(const Body& body, std::shared_ptr<Frame> frame) {
    std::string captured;
    std::string* saved_out = out_;
    std::shared_ptr<Frame> saved_frame = std::move(frame_);
    out_ = &captured;
    frame_ = std::move(frame);
    execute(body);
    out_ = saved_out;
    frame_ = std::move(saved_frame);
    return captured;
}

Interpreter::Flow Interpreter::execute_one(const Stmt& s) {
    try {
        switch (s.kind) {
            case StmtKind::kText:
                write(s.text);
                return Flow::kNormal;
            case StmtKind::kOutput: {
                const Value v = eval(*s.expr);
                write(v.is_string() ? v.as_string() : str(v));
                return Flow::kNormal;
            }
            case StmtKind::kIf:
                for (const auto& [condition, body] : s.branches) {
                    if (!condition || eval(*condition).truthy()) return execute(body);
                }
                return Flow::kNormal;
            case StmtKind::kFor:
                return execute_for(s);
            case StmtKind::kSet:
                execute_set(s);
                return Flow::kNormal;
            case StmtKind::kSetBlock: {
                Value v(capture(s.body, frame_));
                for (const auto& f : s.filters) v = eval_filter(*f, &v);
                assign(s.targets[0], std::move(v));
                return Flow::kNormal;
            }
            case StmtKind::kMacro:
                assign(s.name, define_macro(s));
                return Flow::kNormal;
            case StmtKind::kCallBlock: {
                const Expr& call_expr = *s.expr;
                Value fn = eval(*call_expr.children[0]);
                CallArgs args = eval_args(call_expr, 1);
                std::shared_ptr<Frame> here = frame_;
                const Body* body = &s.body;
                args.keyword.emplace_back("caller", Value::callable("caller", [here, body](Interpreter& in, CallArgs&) {
                                              auto frame = std::make_shared<Frame>();
                                              frame->parent = here;
                                              return Value(in.capture(*body, frame));
                                          }));
                write(str(call(fn, args)));
                return Flow::kNormal;
            }
            case StmtKind::kFilterBlock: {
                Value v(capture(s.body, frame_));
                for (const auto& f : s.filters) v = eval_filter(*f, &v);
                write(str(v));
                return Flow::kNormal;
            }
            case StmtKind::kBreak:
                return Flow::kBreak;
            case StmtKind::kContinue:
                return Flow::kContinue;
            case StmtKind::kGeneration:
                return execute(s.body);
        }
    } catch (TemplateError& err) {
        err.set_line_if_unknown(s.line);
        throw;
    }
    return Flow::kNormal;
}

namespace {

void bind_targets(std::unordered_map<std::string, Value>& vars, const std::vector<std::string>& targets,
                  const Value& item) {
    if (targets.size() == 1) {
        vars[targets[0]] = item;
        return;
    }
    if (!item.is_list()) throw TemplateError("cannot unpack a non-sequence '" + std::string(item.type_name()) + "'");
    if (item.items().size() != targets.size())
        throw TemplateError("expected " + std::to_string(targets.size()) + " values to unpack, got " +
                            std::to_string(item.items().size()));
    for (size_t i = 0; i < targets.size(); ++i) vars[targets[i]] = item.items()[i];
}

}  // namespace

Interpreter::Flow Interpreter::execute_for(const Stmt& s) {
    ValueList items = iterate(eval(*s.expr));
    std::shared_ptr<Frame> outer = frame_;
    if (s.condition) {
        ValueList kept;
        for (Value& item : items) {
            count_iteration();
            frame_ = std::make_shared<Frame>();
            frame_->parent = outer;
            bind_targets(frame_->vars, s.targets, item);
            if (eval(*s.condition).truthy()) kept.push_back(std::move(item));
        }
        frame_ = outer;
        items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
        count_iteration();
        frame_ = std::make_shared<Frame>();
        frame_->parent = outer;
        bind_targets(frame_->vars, s.targets, items[static_cast<size_t>(i)]);
        Value loop = Value::namespace_object();
        ValueDict& l = loop.dict_items();
        l.set("index", Value(i + 1));
        l.set("index0", Value(i));
        l.set("revindex", Value(n - i));
        l.set("revindex0", Value(n - i - 1));
        l.set("first", Value(i == 0));
        l.set("last", Value(i == n - 1));
        l.set("length", Value(n));
        l.set("depth", Value(1));
        l.set("depth0", Value(0));
        if (i > 0) l.set("previtem", items[static_cast<size_t>(i - 1)]);
        if (i + 1 < n) l.set("nextitem", items[static_cast<size_t>(i + 1)]);
        l.set("cycle", Value::callable("cycle", [i](Interpreter&, CallArgs& args) {
                  if (args.positional.empty()) throw TemplateError("no items for cycling given");
                  return args.positional[static_cast<size_t>(i) % args.positional.size()];
              }));
        frame_->vars["loop"] = std::move(loop);
        const Flow flow = execute(s.body);
        frame_ = outer;
        if (flow == Flow::kBreak) break;
    }
    if (n == 0 && !s.else_body.empty()) {
        frame_ = std::make_shared<Frame>();
        frame_->parent = outer;
        const Flow flow = execute(s.else_body);
        frame_ = outer;
        return flow;
    }
    return Flow::kNormal;
}

void Interpreter::execute_set(const Stmt& s) {
    Value v = eval(*s.expr);
    if (!s.attribute.empty()) {
        Value ns = lookup(s.targets[0]);
        if (!ns.is_namespace()) throw TemplateError("cannot assign attribute on non-namespace object");
        ns.dict_items().set(Value(s.attribute), std::move(v));
        return;
    }
    if (s.targets.size() == 1) {
        assign(s.targets[0], std::move(v));
        return;
    }
    bind_targets(frame_->vars, s.targets, v);
}

Value Interpreter::define_macro(const Stmt& s) {
    std::shared_ptr<Frame> closure = frame_;
    const Stmt* macro = &s;
    return Value::callable(s.name, [macro, closure](Interpreter& in, CallArgs& args) {
        Value caller;
        for (auto it = args.keyword.begin(); it != args.keyword.end(); ++it) {
            if (it->first == "caller") {
                caller = it->second;
                args.keyword.erase(it);
                break;
            }
        }
        return in.call_macro(*macro, closure, args, caller);
    });
}

Value Interpreter::call_macro(const Stmt& macro, const std::shared_ptr<Frame>& closure, CallArgs& args,
                              const Value& caller) {
    if (call_depth_ >= limits_.max_call_depth)
        throw TemplateLimitError("macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
    auto frame = std::make_shared<Frame>();
    frame->parent = closure;
    ValueList varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < macro.params.size()) {
            frame->vars[macro.params[i]] = args.positional[i];
        } else {
            varargs.push_back(args.positional[i]);
        }
    }
    Value kwargs = Value::dict();
    for (auto& [k, v] : args.keyword) {
        const auto it = std::find(macro.params.begin(), macro.params.end(), k);
        if (it == macro.params.end()) {
            kwargs.dict_items().set(Value(k), v);
        } else if (frame->vars.count(k)) {
            throw TemplateError("macro '" + macro.name + "' got multiple values for argument '" + k + "'");
        } else {
            frame->vars[k] = v;
        }
    }
    frame->vars["varargs"] = Value::list(std::move(varargs), true);
    frame->vars["kwargs"] = kwargs;
    if (!caller.is_undefined()) frame->vars["caller"] = caller;
    std::shared_ptr<Frame> saved = frame_;
    frame_ = frame;
    for (size_t i = 0; i < macro.params.size(); ++i) {
        if (frame->vars.count(macro.params[i])) continue;
        frame->vars[macro.params[i]] = macro.defaults[i]
                                           ? eval(*macro.defaults[i])
                                           : Value::undefined("parameter '" + macro.params[i] + "' was not provided");
    }
    frame_ = saved;
    ++call_depth_;
    std::string out = capture(macro.body, frame);
    --call_depth_;
    return Value(std::move(out));
}

}  // namespace lazyattn::tmpl
