#include "server/constraint_request.h"

#include "core/utf8.h"
#include "server/request_fields.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;
using Err = std::optional<ApiError>;
using fields::absent;
using fields::type_error;

using grammar::ConstraintKind;
using grammar::ConstraintSpec;

Err text_of(const json& v, const std::string& param, std::string& out) {
    if (!v.is_string()) return type_error(param, "a string");
    out = v.get<std::string>();
    if (!text::is_valid_utf8(out)) return invalid_request("'" + param + "' is not valid UTF-8", param, "invalid_utf8");
    return std::nullopt;
}

// A schema given as a JSON object (or boolean), or as a string holding one (vLLM's guided_json
// takes both).
Err schema_of(const json& v, const std::string& param, ConstraintSpec& spec) {
    spec.kind = ConstraintKind::kJsonSchema;
    spec.field = param;
    if (v.is_object() || v.is_boolean()) {
        spec.text = v.dump();
        return std::nullopt;
    }
    if (!v.is_string()) return type_error(param, "a JSON schema (an object, or a string holding one)");
    if (auto e = text_of(v, param, spec.text)) return e;
    const json parsed = json::parse(spec.text, nullptr, false);
    if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_boolean())) {
        return invalid_request("'" + param + "' is not a JSON schema: the string does not hold a JSON object", param,
                               "invalid_value");
    }
    return std::nullopt;
}

Err text_constraint(const json& v, const std::string& param, ConstraintKind kind, std::optional<ConstraintSpec>& out) {
    ConstraintSpec spec;
    spec.kind = kind;
    spec.field = param;
    if (auto e = text_of(v, param, spec.text)) return e;
    if (spec.text.empty()) return std::nullopt;  // llama-server's clients send "" for none
    out = std::move(spec);
    return std::nullopt;
}

Err choice_constraint(const json& v, const std::string& param, std::optional<ConstraintSpec>& out) {
    if (!v.is_array()) return type_error(param, "a list of strings");
    ConstraintSpec spec;
    spec.kind = ConstraintKind::kChoice;
    spec.field = param;
    for (size_t i = 0; i < v.size(); ++i) {
        std::string c;
        if (auto e = text_of(v[i], param + "[" + std::to_string(i) + "]", c)) return e;
        spec.choices.push_back(std::move(c));
    }
    out = std::move(spec);
    return std::nullopt;
}

// OpenAI's response_format: {type: text | json_object | json_schema}; json_schema's body is
// {name, schema, strict, description}. llama-server also reads a `schema` beside `type`.
Err response_format(const json& rf, std::optional<ConstraintSpec>& out) {
    const std::string p = "response_format";
    if (!rf.is_object()) return type_error(p, "an object");
    if (!rf.contains("type") || !rf.at("type").is_string()) return type_error(p + ".type", "a string");
    const std::string type = rf.at("type").get<std::string>();
    if (type == "text") return std::nullopt;
    ConstraintSpec spec;
    if (type == "json_object" || type == "json_schema") {
        const json* body = &rf;
        std::string where = p;
        if (type == "json_schema" && rf.contains("json_schema")) {
            body = &rf.at("json_schema");
            where = p + ".json_schema";
            if (!body->is_object()) return type_error(where, "an object");
        }
        if (!absent(*body, "strict")) {
            if (!body->at("strict").is_boolean()) return type_error(where + ".strict", "a boolean");
            spec.strict = body->at("strict").get<bool>();
        }
        if (!absent(*body, "schema")) {
            if (auto e = schema_of(body->at("schema"), where + ".schema", spec)) return e;
        } else if (type == "json_schema") {
            return invalid_request("'" + where + ".schema' is required for a json_schema response_format",
                                   where + ".schema", "missing_required_parameter");
        } else {
            spec.kind = ConstraintKind::kJsonObject;
            spec.field = p;
        }
        out = std::move(spec);
        return std::nullopt;
    }
    return invalid_request("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\" (got \"" +
                               clip_for_message(type) + "\")",
                           p + ".type", "invalid_value");
}

// vLLM's structured_outputs: {json | regex | choice | grammar | json_object: true}.
Err structured_outputs(const json& so, std::optional<ConstraintSpec>& out) {
    const std::string p = "structured_outputs";
    if (!so.is_object()) return type_error(p, "an object");
    std::optional<ConstraintSpec> found;
    int count = 0;
    for (const auto& [key, v] : so.items()) {
        if (v.is_null()) continue;
        const std::string f = p + "." + key;
        Err e;
        if (key == "json") {
            ConstraintSpec spec;
            e = schema_of(v, f, spec);
            if (!e) found = std::move(spec);
        } else if (key == "regex") {
            e = text_constraint(v, f, ConstraintKind::kRegex, found);
        } else if (key == "choice") {
            e = choice_constraint(v, f, found);
        } else if (key == "grammar") {
            e = text_constraint(v, f, ConstraintKind::kGrammar, found);
        } else if (key == "json_object") {
            if (!v.is_boolean()) return type_error(f, "a boolean");
            if (!v.get<bool>()) continue;
            ConstraintSpec spec;
            spec.kind = ConstraintKind::kJsonObject;
            spec.field = f;
            found = std::move(spec);
        } else if (key == "whitespace_pattern" || key == "disable_any_whitespace" || key == "disable_fallback" ||
                   key == "disable_additional_properties" || key == "backend") {
            continue;  // how the engine lays out whitespace or which backend: lazyattn has one
        } else {
            return invalid_request("'" + f +
                                       "' is not supported (structured_outputs takes json, regex, choice, "
                                       "grammar or json_object)",
                                   f, "unsupported");
        }
        if (e) return e;
        ++count;
    }
    if (count > 1) return invalid_request("'" + p + "' must set only one of its constraints", p, "invalid_value");
    out = std::move(found);
    return std::nullopt;
}

}  // namespace

Err parse_constraint(const json& body, std::optional<ConstraintSpec>& out) {
    out.reset();
    std::vector<std::string> given;  // the fields that asked for a constraint
    auto take = [&](std::optional<ConstraintSpec> spec) {
        if (spec) {
            given.push_back(spec->field);
            out = std::move(spec);
        }
    };
    std::optional<ConstraintSpec> spec;
    if (!absent(body, "response_format")) {
        if (auto e = response_format(body.at("response_format"), spec)) return e;
        take(std::move(spec));
        spec.reset();
    }
    for (const char* key : {"grammar", "guided_grammar"}) {
        if (absent(body, key)) continue;
        if (auto e = text_constraint(body.at(key), key, ConstraintKind::kGrammar, spec)) return e;
        take(std::move(spec));
        spec.reset();
    }
    for (const char* key : {"json_schema", "guided_json"}) {
        if (absent(body, key)) continue;
        const json& v = body.at(key);
        if (v.is_string() && v.get<std::string>().empty()) continue;
        ConstraintSpec s;
        if (auto e = schema_of(v, key, s)) return e;
        take(std::move(s));
    }
    if (!absent(body, "guided_regex")) {
        if (auto e = text_constraint(body.at("guided_regex"), "guided_regex", ConstraintKind::kRegex, spec)) return e;
        take(std::move(spec));
        spec.reset();
    }
    if (!absent(body, "guided_choice")) {
        if (auto e = choice_constraint(body.at("guided_choice"), "guided_choice", spec)) return e;
        take(std::move(spec));
        spec.reset();
    }
    if (!absent(body, "structured_outputs")) {
        if (auto e = structured_outputs(body.at("structured_outputs"), spec)) return e;
        take(std::move(spec));
        spec.reset();
    }
    if (!absent(body, "guided_decoding_backend") && !body.at("guided_decoding_backend").is_string()) {
        return type_error("guided_decoding_backend", "a string");
    }
    if (given.size() > 1) {
        return invalid_request(
            "'" + given[1] + "' and '" + given[0] + "' both constrain the output; a request may use one of them",
            given[1], "invalid_value");
    }
    return std::nullopt;
}

ApiError constraint_error(const ConstraintSpec& spec, const Status& status) {
    const std::string& f = spec.field;
    switch (status.code()) {
        case StatusCode::kUnsupported:
            return invalid_request("'" + f + "': " + status.message(), f, "unsupported");
        case StatusCode::kUnavailable:
            return ApiError{503, "'" + f + "' could not be compiled now: " + status.message(), "server_error", f,
                            "grammar_engine_busy"};
        default:
            return invalid_request(
                "'" + f + "' is not a valid " + grammar::constraint_kind_name(spec.kind) + ": " + status.message(), f,
                "invalid_value");
    }
}

}  // namespace lazyattn::server
