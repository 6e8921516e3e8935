#include "grammar/constraint.h"

namespace lazyattn::grammar {

const char* constraint_kind_name(ConstraintKind kind) {
    switch (kind) {
        case ConstraintKind::kJsonObject:
            return "json_object";
        case ConstraintKind::kJsonSchema:
            return "json_schema";
        case ConstraintKind::kGrammar:
            return "grammar";
        case ConstraintKind::kRegex:
            return "regex";
        case ConstraintKind::kChoice:
            return "choice";
        case ConstraintKind::kStructuralTag:
            return "tool call format";
    }
    return "?";
}

std::string ConstraintSpec::cache_key() const {
    std::string key = constraint_kind_name(kind);
    key += strict ? "/strict\n" : "/loose\n";
    key += text;
    for (const std::string& c : choices) {
        key += '\n';
        key += std::to_string(c.size());  // length-prefixed: no choice text can fake a boundary
        key += ':';
        key += c;
    }
    return key;
}

}  // namespace lazyattn::grammar
