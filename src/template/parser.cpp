#include "template/parser.h"

#include <algorithm>
#include <string_view>

#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

constexpr std::string_view kCompareOps[] = {"==", "!=", "<", "<=", ">", ">="};

class Parser {
public:
    explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

    Body parse_all() {
        std::string found;
        Body body = parse_body({}, found);
        return body;
    }

private:
    // --- token stream ---
    const Token& cur() const { return tokens_[pos_]; }
    const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
    const Token& next() {
        const Token& t = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) ++pos_;
        return t;
    }
    bool is_op(std::string_view op) const { return cur().kind == TokenKind::kOperator && cur().text == op; }
    bool is_name(std::string_view name) const { return cur().kind == TokenKind::kName && cur().text == name; }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(std::string_view name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    [[noreturn]] void fail(const std::string& message) const { throw TemplateError(message, cur().line); }
    std::string describe(const Token& t) const {
        switch (t.kind) {
            case TokenKind::kEnd:
                return "end of template";
            case TokenKind::kBlockEnd:
                return "'%}'";
            case TokenKind::kVariableEnd:
                return "'}}'";
            case TokenKind::kText:
                return "template text";
            default:
                return "'" + t.text + "'";
        }
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op)) fail("expected '" + std::string(op) + "', got " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().kind != TokenKind::kName) fail("expected a name, got " + describe(cur()));
        return next().text;
    }
    void expect_block_end() {
        if (cur().kind != TokenKind::kBlockEnd) fail("expected '%}', got " + describe(cur()));
        next();
    }

    struct DepthGuard {
        explicit DepthGuard(Parser& p) : p_(p) {
            if (++p_.depth_ > kMaxNesting) p_.fail("template nested too deep");
        }
        ~DepthGuard() { --p_.depth_; }
        Parser& p_;
    };

    ExprPtr node(ExprKind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    // Computes the node's depth from its children and refuses trees deeper than kMaxNesting:
    // chains like `x|f|f|f...` or `1+1+1...` are built by loops, not recursion, yet evaluating
    // and freeing them recurses.
    ExprPtr sealed(ExprPtr e) {
        int depth = 0;
        for (const auto& c : e->children) {
            if (c) depth = std::max(depth, c->depth);
        }
        for (const auto& [_, v] : e->kwargs) depth = std::max(depth, v->depth);
        e->depth = depth + 1;
        if (e->depth > kMaxNesting) throw TemplateError("expression nested too deep", e->line);
        return e;
    }

    // --- statements ---
    // Statements until a {% tag %} named in `enders` (its name consumed, returned in `found`), or
    // the end of the template when `enders` is empty.
    Body parse_body(std::initializer_list<std::string_view> enders, std::string& found) {
        DepthGuard guard(*this);
        Body body;
        while (true) {
            const Token& t = cur();
            if (t.kind == TokenKind::kEnd) {
                if (enders.size() == 0) return body;
                std::string names;
                for (std::string_view e : enders) names += (names.empty() ? "'" : " or '") + std::string(e) + "'";
                fail("unexpected end of template: expected " + names);
            }
            if (t.kind == TokenKind::kText) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::kText;
                s->line = t.line;
                s->text = t.text;
                body.push_back(std::move(s));
                next();
            } else if (t.kind == TokenKind::kVariableBegin) {
                next();
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::kOutput;
                s->line = t.line;
                s->expr = parse_tuple(true);
                if (cur().kind != TokenKind::kVariableEnd) fail("expected '}}', got " + describe(cur()));
                next();
                body.push_back(std::move(s));
            } else if (t.kind == TokenKind::kBlockBegin) {
                next();
                if (cur().kind != TokenKind::kName) fail("expected a tag name, got " + describe(cur()));
                for (std::string_view e : enders) {
                    if (cur().text == e) {
                        found = next().text;
                        return body;
                    }
                }
                body.push_back(parse_statement());
            } else {
                fail("unexpected " + describe(t));
            }
        }
    }

    StmtPtr parse_statement() {
        const Token& tag = cur();
        const std::string name = tag.text;
        auto s = std::make_unique<Stmt>();
        s->line = tag.line;
        next();
        if (name == "if") {
            parse_if(*s);
        } else if (name == "for") {
            parse_for(*s);
        } else if (name == "set") {
            parse_set(*s);
        } else if (name == "macro") {
            parse_macro(*s);
        } else if (name == "call") {
            parse_call_block(*s);
        } else if (name == "filter") {
            s->kind = StmtKind::kFilterBlock;
            parse_filter_chain(*s);
            expect_block_end();
            std::string found;
            s->body = parse_body({"endfilter"}, found);
            expect_block_end();
        } else if (name == "generation") {
            s->kind = StmtKind::kGeneration;
            expect_block_end();
            std::string found;
            s->body = parse_body({"endgeneration"}, found);
            expect_block_end();
        } else if (name == "break" || name == "continue") {
            if (loop_depth_ == 0) throw TemplateError("'" + name + "' outside of a loop", tag.line);
            s->kind = name == "break" ? StmtKind::kBreak : StmtKind::kContinue;
            expect_block_end();
        } else {
            throw TemplateError("unknown tag '" + name + "'", s->line);
        }
        return s;
    }

    void parse_if(Stmt& s) {
        s.kind = StmtKind::kIf;
        ExprPtr condition = parse_expression();
        while (true) {
            expect_block_end();
            std::string found;
            Body body = parse_body({"elif", "else", "endif"}, found);
            s.branches.emplace_back(std::move(condition), std::move(body));
            if (found == "elif") {
                condition = parse_expression();
                continue;
            }
            if (found == "else") {
                expect_block_end();
                s.branches.emplace_back(nullptr, parse_body({"endif"}, found));
            }
            expect_block_end();
            return;
        }
    }

    void parse_for(Stmt& s) {
        s.kind = StmtKind::kFor;
        s.targets = parse_targets();
        if (!skip_name("in")) fail("expected 'in' in a for loop, got " + describe(cur()));
        s.expr = parse_tuple(false);
        if (skip_name("if")) s.condition = parse_expression();
        if (is_name("recursive")) fail("recursive loops are not supported");
        expect_block_end();
        ++loop_depth_;
        std::string found;
        s.body = parse_body({"else", "endfor"}, found);
        --loop_depth_;
        if (found == "else") {
            expect_block_end();
            s.else_body = parse_body({"endfor"}, found);
        }
        expect_block_end();
    }

    std::vector<std::string> parse_targets() {
        std::vector<std::string> names;
        const bool parens = skip_op("(");
        do {
            names.push_back(expect_name());
        } while (skip_op(","));
        if (parens) expect_op(")");
        return names;
    }

    void parse_set(Stmt& s) {
        const std::string first = expect_name();
        s.targets.push_back(first);
        if (skip_op(".")) {
            s.attribute = expect_name();
        } else {
            while (skip_op(",")) s.targets.push_back(expect_name());
        }
        if (skip_op("=")) {
            s.kind = StmtKind::kSet;
            s.expr = parse_tuple(true);
            expect_block_end();
            return;
        }
        if (!s.attribute.empty() || s.targets.size() != 1) fail("expected '=' in a set");
        s.kind = StmtKind::kSetBlock;
        if (is_op("|")) parse_filter_chain(s);
        expect_block_end();
        std::string found;
        s.body = parse_body({"endset"}, found);
        expect_block_end();
    }

    // "name(args) | name2 ..." after {% filter or {% set x: kFilter nodes without an operand.
    void parse_filter_chain(Stmt& s) {
        skip_op("|");
        do {
            s.filters.push_back(parse_filter(nullptr));
        } while (skip_op("|"));
    }

    void parse_macro(Stmt& s) {
        s.kind = StmtKind::kMacro;
        s.name = expect_name();
        expect_op("(");
        while (!skip_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (skip_op(")")) break;
            s.params.push_back(expect_name());
            s.defaults.push_back(skip_op("=") ? parse_expression() : nullptr);
        }
        expect_block_end();
        const int saved_loops = loop_depth_;
        loop_depth_ = 0;
        std::string found;
        s.body = parse_body({"endmacro"}, found);
        loop_depth_ = saved_loops;
        if (cur().kind == TokenKind::kName && cur().text == s.name) next();
        expect_block_end();
    }

    void parse_call_block(Stmt& s) {
        s.kind = StmtKind::kCallBlock;
        if (is_op("(")) fail("caller parameters in {% call(...) %} are not supported");
        s.expr = parse_expression();
        if (s.expr->kind != ExprKind::kCall) fail("{% call %} expects a macro call");
        expect_block_end();
        std::string found;
        s.body = parse_body({"endcall"}, found);
        expect_block_end();
    }

    // --- expressions ---
    // Comma-separated expressions form a tuple ("a, b"); `with_condition` allows "x if c else y".
    ExprPtr parse_tuple(bool with_condition) {
        const int line = cur().line;
        std::vector<ExprPtr> items;
        bool comma = false;
        while (true) {
            if (!items.empty()) {
                if (!skip_op(",")) break;
                comma = true;
                if (!starts_expression()) break;
            }
            items.push_back(with_condition ? parse_expression() : parse_or());
        }
        if (!comma) return std::move(items[0]);
        auto e = node(ExprKind::kTuple, line);
        e->children = std::move(items);
        return sealed(std::move(e));
    }

    bool starts_expression() const {
        const Token& t = cur();
        if (t.kind == TokenKind::kName) return t.text != "in" && t.text != "recursive" && t.text != "if";
        if (t.kind == TokenKind::kOperator)
            return t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" || t.text == "+";
        return t.kind == TokenKind::kString || t.kind == TokenKind::kInteger || t.kind == TokenKind::kFloat;
    }

    ExprPtr parse_expression() {
        DepthGuard guard(*this);
        ExprPtr expr = parse_or();
        while (is_name("if")) {
            const int line = next().line;
            auto cond = node(ExprKind::kCondition, line);
            ExprPtr test = parse_or();
            ExprPtr otherwise = skip_name("else") ? parse_expression() : nullptr;
            cond->children.push_back(std::move(test));
            cond->children.push_back(std::move(expr));
            cond->children.push_back(std::move(otherwise));
            expr = sealed(std::move(cond));
        }
        return expr;
    }

    ExprPtr binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op = {}) {
        auto e = node(kind, line);
        e->name = std::move(op);
        e->children.push_back(std::move(left));
        e->children.push_back(std::move(right));
        return sealed(std::move(e));
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            const int line = next().line;
            left = binary(ExprKind::kOr, std::move(left), parse_and(), line);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            const int line = next().line;
            left = binary(ExprKind::kAnd, std::move(left), parse_not(), line);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            const int line = next().line;
            auto e = node(ExprKind::kNot, line);
            e->children.push_back(parse_not());
            return sealed(std::move(e));
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const int line = cur().line;
        ExprPtr first = parse_math1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            if (cur().kind == TokenKind::kOperator) {
                for (std::string_view c : kCompareOps) {
                    if (cur().text == c) op = c;
                }
                if (!op.empty()) next();
            }
            if (op.empty() && is_name("in")) {
                next();
                op = "in";
            } else if (op.empty() && is_name("not") && peek().kind == TokenKind::kName && peek().text == "in") {
                next();
                next();
                op = "notin";
            }
            if (op.empty()) break;
            if (!cmp) {
                cmp = node(ExprKind::kCompare, line);
                cmp->children.push_back(std::move(first));
            }
            cmp->ops.push_back(op);
            cmp->children.push_back(parse_math1());
        }
        return cmp ? sealed(std::move(cmp)) : std::move(first);
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token& t = next();
            left = binary(ExprKind::kBinary, std::move(left), parse_concat(), t.line, t.text);
        }
        return left;
    }

    ExprPtr parse_concat() {
        const int line = cur().line;
        ExprPtr first = parse_math2();
        if (!is_op("~")) return first;
        auto e = node(ExprKind::kConcat, line);
        e->children.push_back(std::move(first));
        while (skip_op("~")) e->children.push_back(parse_math2());
        return sealed(std::move(e));
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& t = next();
            left = binary(ExprKind::kBinary, std::move(left), parse_pow(), t.line, t.text);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            const Token& t = next();
            left = binary(ExprKind::kBinary, std::move(left), parse_unary(true), t.line, t.text);
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            const Token& t = next();
            e = node(t.text == "-" ? ExprKind::kNeg : ExprKind::kPos, t.line);
            e->children.push_back(parse_unary(false));
            e = sealed(std::move(e));
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filter_expr(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = cur();
        if (t.kind == TokenKind::kName) {
            next();
            auto e = node(ExprKind::kLiteral, t.line);
            if (t.text == "true" || t.text == "True") {
                e->literal = Value(true);
            } else if (t.text == "false" || t.text == "False") {
                e->literal = Value(false);
            } else if (t.text == "none" || t.text == "None") {
                e->literal = Value::none();
            } else {
                e->kind = ExprKind::kName;
                e->name = t.text;
            }
            return e;
        }
        if (t.kind == TokenKind::kString) {
            std::string s;
            while (cur().kind == TokenKind::kString) s += next().text;  // adjacent literals join
            auto e = node(ExprKind::kLiteral, t.line);
            e->literal = Value(std::move(s));
            return e;
        }
        if (t.kind == TokenKind::kInteger || t.kind == TokenKind::kFloat) {
            next();
            auto e = node(ExprKind::kLiteral, t.line);
            e->literal = t.kind == TokenKind::kInteger ? Value(t.integer) : Value(t.number);
            return e;
        }
        if (skip_op("(")) {
            if (skip_op(")")) return node(ExprKind::kTuple, t.line);
            ExprPtr inner = parse_expression();
            if (is_op(",")) {
                auto tuple = node(ExprKind::kTuple, t.line);
                tuple->children.push_back(std::move(inner));
                while (skip_op(",") && !is_op(")")) tuple->children.push_back(parse_expression());
                inner = sealed(std::move(tuple));
            }
            expect_op(")");
            return inner;
        }
        if (skip_op("[")) {
            auto e = node(ExprKind::kList, t.line);
            while (!skip_op("]")) {
                if (!e->children.empty()) expect_op(",");
                if (skip_op("]")) break;
                e->children.push_back(parse_expression());
            }
            return sealed(std::move(e));
        }
        if (skip_op("{")) {
            auto e = node(ExprKind::kDict, t.line);
            while (!skip_op("}")) {
                if (!e->children.empty()) expect_op(",");
                if (skip_op("}")) break;
                e->children.push_back(parse_expression());
                expect_op(":");
                e->children.push_back(parse_expression());
            }
            return sealed(std::move(e));
        }
        fail("unexpected " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            if (is_op(".")) {
                const int line = next().line;
                if (cur().kind == TokenKind::kInteger) {
                    auto item = node(ExprKind::kGetItem, line);
                    auto key = node(ExprKind::kLiteral, line);
                    key->literal = Value(next().integer);
                    item->children.push_back(std::move(e));
                    item->children.push_back(std::move(key));
                    e = sealed(std::move(item));
                    continue;
                }
                auto attr = node(ExprKind::kGetAttr, line);
                attr->name = expect_name();
                attr->children.push_back(std::move(e));
                e = sealed(std::move(attr));
            } else if (is_op("[")) {
                e = parse_subscript(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr obj) {
        const int line = next().line;  // [
        ExprPtr parts[3];
        int colons = 0;
        while (!is_op("]")) {
            if (skip_op(":")) {
                if (++colons > 2) fail("too many ':' in a slice");
                continue;
            }
            if (parts[colons]) fail("expected ':' or ']' in a subscript");
            parts[colons] = parse_expression();
        }
        next();  // ]
        if (colons == 0) {
            if (!parts[0]) fail("empty subscript");
            auto item = node(ExprKind::kGetItem, line);
            item->children.push_back(std::move(obj));
            item->children.push_back(std::move(parts[0]));
            return sealed(std::move(item));
        }
        auto slice = node(ExprKind::kSlice, line);
        slice->children.push_back(std::move(obj));
        for (auto& p : parts) slice->children.push_back(std::move(p));
        return sealed(std::move(slice));
    }

    void parse_call_args(Expr& call) {
        expect_op("(");
        bool first = true;
        while (!skip_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (skip_op(")")) return;
            if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
            if (cur().kind == TokenKind::kName && peek().kind == TokenKind::kOperator && peek().text == "=") {
                std::string key = next().text;
                next();
                call.kwargs.emplace_back(std::move(key), parse_expression());
            } else {
                if (!call.kwargs.empty()) fail("positional argument after a keyword argument");
                call.children.push_back(parse_expression());
            }
        }
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto call = node(ExprKind::kCall, cur().line);
        call->children.push_back(std::move(callee));
        parse_call_args(*call);
        return sealed(std::move(call));
    }

    ExprPtr parse_filter_expr(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                next();
                e = parse_filter(std::move(e));
            } else if (is_name("is")) {
                e = parse_test(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_filter(ExprPtr operand) {
        DepthGuard guard(*this);
        const int line = cur().line;
        auto f = node(ExprKind::kFilter, line);
        f->name = expect_name();
        f->children.push_back(std::move(operand));
        if (is_op("(")) parse_call_args(*f);
        return sealed(std::move(f));
    }

    ExprPtr parse_test(ExprPtr subject) {
        DepthGuard guard(*this);
        const int line = next().line;  // is
        auto t = node(ExprKind::kTest, line);
        t->negated = skip_name("not");
        t->name = expect_name();
        t->children.push_back(std::move(subject));
        const Token& c = cur();
        if (is_op("(")) {
            parse_call_args(*t);
        } else if ((c.kind == TokenKind::kName && c.text != "else" && c.text != "or" && c.text != "and") ||
                   c.kind == TokenKind::kString || c.kind == TokenKind::kInteger || c.kind == TokenKind::kFloat ||
                   is_op("[") || is_op("{")) {
            if (is_name("is")) fail("tests cannot be chained with 'is'");
            t->children.push_back(parse_postfix(parse_primary()));
        }
        return sealed(std::move(t));
    }

    const std::vector<Token>& tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens) { return Parser(tokens).parse_all(); }

}  // namespace lazyattn::tmpl
