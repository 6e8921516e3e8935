#include "server/tool_calls/tool_constraint.h"

#include <nlohmann/json.hpp>

#include "server/constraint_request.h"

namespace lazyattn::server::tool_calls {
namespace {

using json = nlohmann::json;

struct CallShape {
    std::string begin_prefix, begin_suffix, end, separator;
};

// How one call is laid out per family: begin = prefix + name + suffix, the arguments' JSON, end.
CallShape shape_of(ToolFamily family) {
    switch (family) {
        case ToolFamily::kHermes:
            return {"<tool_call>\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>", "\n"};
        case ToolFamily::kSmolLM2:
            return {"<tool_call>[{\"name\": \"", "\", \"arguments\": ", "}]</tool_call>", "\n"};
        case ToolFamily::kPhi:
            return {"<|tool_call|>[{\"name\": \"", "\", \"arguments\": ", "}]<|/tool_call|>", "\n"};
        case ToolFamily::kLlama3:
            return {"{\"name\": \"", "\", \"parameters\": ", "}", "; "};
        case ToolFamily::kMistral:  // one list per call: the parser reads either
            return {"[TOOL_CALLS][{\"name\": \"", "\", \"arguments\": ", "}]", "\n"};
        case ToolFamily::kMistralArgs:  // each call opens with its marker (the engine wants a separator)
            return {"[TOOL_CALLS]", "[ARGS]", "", "\n"};
    }
    return {};
}

}  // namespace

grammar::ConstraintSpec tool_constraint(const ToolRequest& r) {
    const CallShape shape = shape_of(r.format.family);
    json tags = json::array();
    for (const ToolDefinition& t : r.tools) {
        if (r.choice == ToolChoice::kNamed && t.name != r.named) continue;
        // Names match ^[a-zA-Z0-9_-]{1,64}$: nothing in them needs escaping inside the JSON string.
        tags.push_back({{"type", "tag"},
                        {"begin", shape.begin_prefix + t.name + shape.begin_suffix},
                        {"content", {{"type", "json_schema"}, {"json_schema", t.parameters}}},
                        {"end", shape.end}});
    }
    json calls = {{"type", "tags_with_separator"},
                  {"tags", std::move(tags)},
                  {"separator", shape.separator},
                  {"at_least_one", true},
                  {"stop_after_first", !r.parallel}};
    json format = std::move(calls);
    grammar::ConstraintSpec spec;
    spec.kind = grammar::ConstraintKind::kStructuralTag;
    spec.text = json{{"type", "structural_tag"}, {"format", std::move(format)}}.dump();
    spec.field = r.choice_field;
    return spec;
}

std::optional<ApiError> check_tool_schemas(const ToolRequest& r, grammar::ConstraintCompiler& compiler) {
    if (!grammar::engine_available()) return std::nullopt;
    for (const ToolDefinition& t : r.tools) {
        grammar::ConstraintSpec spec;
        spec.kind = grammar::ConstraintKind::kJsonSchema;
        spec.text = t.parameters.dump();
        spec.strict = false;
        spec.field = t.parameters_field;
        // Converted, not compiled: a schema's token masks are computed once, inside the forced
        // call's structural tag (or never, for tool_choice auto), which halves a first forced
        // call's compile (ToolConstraintProfile in tests/server/test_tool_calls_units.cpp).
        if (Status st = compiler.check(spec); !st.ok()) return constraint_error(spec, st);
    }
    return std::nullopt;
}

}  // namespace lazyattn::server::tool_calls
