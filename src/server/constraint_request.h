// Structured output fields of a generation request, in every peer's spelling (docs/api.md
// "Structured output"): OpenAI's response_format (json_object; json_schema with name, schema and
// strict), llama-server's `grammar` (GBNF) and `json_schema`, vLLM's guided_json / guided_regex /
// guided_choice / guided_grammar and structured_outputs {json, regex, choice, grammar,
// json_object}. At most one may constrain a request; each error names its field. The text is
// compiled later, against the model's vocabulary (ServingFront::prepare, grammar::ConstraintCompiler).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "grammar/constraint.h"
#include "server/api_error.h"

namespace lazyattn::server {

// Leaves `out` empty when the body asks for no constraint (response_format text, empty strings).
std::optional<ApiError> parse_constraint(const nlohmann::json& body, std::optional<grammar::ConstraintSpec>& out);

// The 400 (or 503) for a constraint the compiler refused: names spec.field with the reason.
ApiError constraint_error(const grammar::ConstraintSpec& spec, const Status& status);

}  // namespace lazyattn::server
