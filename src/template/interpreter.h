// Walks a parsed template: evaluates expressions with Python's semantics and runs statements with
// Jinja's scoping (each loop iteration and each macro call gets its own frame; `if` does not; a
// `set` in a loop body does not leak out, which is why templates use namespace()). Everything a
// template can make the interpreter do is metered against RenderLimits, so hostile templates end
// in a TemplateLimitError instead of exhausting time, memory or the stack.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "template/ast.h"
#include "template/value.h"

namespace lazyattn::tmpl {

struct RenderLimits {
    size_t max_output_bytes = 32u << 20;      // the rendered text
    size_t max_work_bytes = 512u << 20;       // bytes of strings built along the way (time bound)
    int64_t max_loop_iterations = 1'000'000;  // all loops and list-building filters together
    int max_call_depth = 32;                  // nested macro calls
    int64_t max_range = 100'000;              // range()'s length, as jinja2's sandbox (MAX_RANGE)
};

class Interpreter {
public:
    // `now` is what strftime_now() formats (UTC).
    Interpreter(const RenderLimits& limits, std::time_t now) : limits_(limits), now_(now) {}

    // Runs `body` with `context` (a dict of variables) and the globals; returns the output.
    std::string render(const Body& body, const Value& context);

    // --- used by filters, tests, methods and globals ---
    Value call(const Value& fn, CallArgs& args);
    Value getattr(const Value& obj, const std::string& name);
    Value getitem(const Value& obj, const Value& key);
    // The items a for loop visits (list items, dict keys, string characters); undefined gives none.
    ValueList iterate(const Value& v);
    // Charges `bytes` of string building to the work budget.
    void charge(size_t bytes);
    // Charges one loop iteration / one element built.
    void count_iteration();
    std::string str(const Value& v);  // str(v), charged
    std::time_t now() const { return now_; }
    const RenderLimits& limits() const { return limits_; }

private:
    struct Frame {
        std::unordered_map<std::string, Value> vars;
        std::shared_ptr<Frame> parent;
    };
    enum class Flow { kNormal, kBreak, kContinue };

    Value eval(const Expr& e);
    Value eval_binary(const Expr& e);
    Value eval_compare(const Expr& e);
    Value eval_call(const Expr& e);
    Value eval_filter(const Expr& e, const Value* block_input);
    Value eval_slice(const Expr& e);
    CallArgs eval_args(const Expr& e, size_t first_child);

    Flow execute(const Body& body);
    Flow execute_one(const Stmt& s);
    Flow execute_for(const Stmt& s);
    void execute_set(const Stmt& s);
    Value define_macro(const Stmt& s);
    Value call_macro(const Stmt& macro, const std::shared_ptr<Frame>& closure, CallArgs& args, const Value& caller);
    std::string capture(const Body& body, std::shared_ptr<Frame> frame);
    void write(std::string_view text);

    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value v) { frame_->vars[name] = std::move(v); }

    RenderLimits limits_;
    std::time_t now_;
    std::shared_ptr<Frame> frame_;
    std::string* out_ = nullptr;
    size_t work_bytes_ = 0;
    int64_t iterations_ = 0;
    int call_depth_ = 0;
};

}  // namespace lazyattn::tmpl
