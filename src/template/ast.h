// The parsed form of a template: expressions and statements as plain trees the interpreter walks.
// One node type each, with a kind and the few fields every kind shares, keeps the parser and the
// interpreter short; the comment on each kind says which fields it uses.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace lazyattn::tmpl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
    kLiteral,    // literal
    kName,       // name
    kList,       // children: items
    kTuple,      // children: items
    kDict,       // children: key, value, key, value, ...
    kGetAttr,    // children[0].name
    kGetItem,    // children[0][children[1]]
    kSlice,      // children[0][children[1]:children[2]:children[3]] (null = omitted)
    kCall,       // children[0](children[1..], kwargs)
    kFilter,     // children[0] | name(children[1..], kwargs); children[0] null in {% filter %} blocks
    kTest,       // children[0] is [not] name(children[1..]); negated
    kNeg,        // -children[0]
    kPos,        // +children[0]
    kNot,        // not children[0]
    kBinary,     // children[0] name children[1]; name is "+", "-", "*", "/", "//", "%", "**"
    kAnd,        // children[0] and children[1]
    kOr,         // children[0] or children[1]
    kCompare,    // children[0] ops[0] children[1] ops[1] ...; ops: == != < <= > >= in notin
    kConcat,     // children joined with ~
    kCondition,  // children[1] if children[0] else children[2] (null: undefined)
};

struct Expr {
    ExprKind kind = ExprKind::kLiteral;
    int line = 0;
    Value literal;
    std::string name;
    std::vector<ExprPtr> children;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;
    bool negated = false;
    int depth = 1;  // of the tree below, bounded by the parser (the interpreter recurses on it)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // branches: (condition, body)..., a final (null, body) for else
    kFor,          // for targets in expr [if condition]: body; else_body
    kSet,          // set targets = expr; with attribute: set targets[0].attribute = expr
    kSetBlock,     // set targets[0] | filters: body
    kMacro,        // macro name(params = defaults): body
    kCallBlock,    // call expr (a macro call) with body as its caller()
    kFilterBlock,  // filter filters: body
    kBreak,
    kContinue,
    kGeneration,  // transformers' {% generation %}: body, unchanged
};

struct Stmt {
    StmtKind kind = StmtKind::kText;
    int line = 0;
    std::string text;
    std::string name;
    std::string attribute;
    ExprPtr expr;
    ExprPtr condition;
    std::vector<std::string> targets;
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body;
    Body else_body;
    std::vector<ExprPtr> filters;  // kFilter nodes with a null operand, applied in order
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // one per param, null where it has none
};

}  // namespace lazyattn::tmpl
