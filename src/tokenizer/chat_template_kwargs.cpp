#include "tokenizer/chat_template_kwargs.h"

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace lazyattn::tokenizer {
namespace {

// Set by the renderer itself (a request's own fields say these), or not served.
constexpr std::array<std::string_view, 6> kReserved = {
    "messages", "add_generation_prompt", "bos_token", "eos_token", "tools", "documents"};

Expected<tmpl::Value> to_value(const nlohmann::json& j, int depth, const std::string& where) {
    if (depth > kMaxTemplateKwargsDepth)
        return invalid_argument(where + " is nested deeper than " + std::to_string(kMaxTemplateKwargsDepth));
    switch (j.type()) {
        case nlohmann::json::value_t::null:
            return tmpl::Value::none();
        case nlohmann::json::value_t::boolean:
            return tmpl::Value(j.get<bool>());
        case nlohmann::json::value_t::number_integer:
            return tmpl::Value(j.get<int64_t>());
        case nlohmann::json::value_t::number_unsigned:
            if (j.get<uint64_t>() > uint64_t(INT64_MAX)) return invalid_argument(where + " is too large an integer");
            return tmpl::Value(static_cast<int64_t>(j.get<uint64_t>()));
        case nlohmann::json::value_t::number_float:
            return tmpl::Value(j.get<double>());
        case nlohmann::json::value_t::string:
            return tmpl::Value(j.get<std::string>());
        case nlohmann::json::value_t::array: {
            tmpl::ValueList items;
            for (size_t i = 0; i < j.size(); ++i) {
                LA_ASSIGN_OR_RETURN(tmpl::Value v, to_value(j[i], depth + 1, where + "[" + std::to_string(i) + "]"));
                items.push_back(std::move(v));
            }
            return tmpl::Value::list(std::move(items));
        }
        case nlohmann::json::value_t::object: {
            tmpl::Value d = tmpl::Value::dict();
            for (const auto& [k, v] : j.items()) {
                LA_ASSIGN_OR_RETURN(tmpl::Value value, to_value(v, depth + 1, where + "." + k));
                d.dict_items().set(tmpl::Value(k), std::move(value));
            }
            return d;
        }
        default:
            return invalid_argument(where + " is not a JSON value a template can read");
    }
}

}  // namespace

Expected<tmpl::Value> chat_template_kwargs_from_json(const nlohmann::json& object, std::string_view field) {
    const std::string name(field);
    if (!object.is_object()) return invalid_argument(name + " must be a JSON object");
    if (object.size() > kMaxTemplateKwargs)
        return invalid_argument(name + " has " + std::to_string(object.size()) + " names; at most " +
                                std::to_string(kMaxTemplateKwargs));
    if (object.dump().size() > kMaxTemplateKwargsBytes)
        return invalid_argument(name + " is larger than " + std::to_string(kMaxTemplateKwargsBytes) + " bytes");
    for (const auto& [key, value] : object.items()) {
        for (std::string_view reserved : kReserved) {
            if (key == reserved)
                return invalid_argument(name + "." + key +
                                        ": the renderer sets this variable itself (use the request's own field)");
        }
    }
    return to_value(object, 0, name);
}

Expected<tmpl::Value> template_value_from_json(const nlohmann::json& value, std::string_view where) {
    return to_value(value, 0, std::string(where));
}

Expected<tmpl::Value> chat_template_kwargs_from_text(std::string_view text, std::string_view field) {
    const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    if (parsed.is_discarded()) return invalid_argument(std::string(field) + " is not valid JSON");
    return chat_template_kwargs_from_json(parsed, field);
}

Expected<tmpl::Value> server_template_kwargs(std::string_view json_text, std::optional<bool> enable_thinking) {
    nlohmann::json kwargs = nlohmann::json::object();
    if (!json_text.empty()) {
        kwargs = nlohmann::json::parse(json_text, nullptr, false);
        if (kwargs.is_discarded()) return invalid_argument("--chat-template-kwargs is not valid JSON");
        if (!kwargs.is_object()) return invalid_argument("--chat-template-kwargs must be a JSON object");
    }
    if (enable_thinking) kwargs["enable_thinking"] = *enable_thinking;
    if (kwargs.empty()) return tmpl::Value();
    return chat_template_kwargs_from_json(kwargs, "--chat-template-kwargs");
}

tmpl::Value merge_template_kwargs(const tmpl::Value& defaults, const tmpl::Value& overrides) {
    if (!overrides.is_dict() || overrides.dict_items().size() == 0) return defaults;
    if (!defaults.is_dict() || defaults.dict_items().size() == 0) return overrides;
    tmpl::Value merged = tmpl::Value::dict();
    for (const auto& [k, v] : defaults.dict_items().entries()) merged.dict_items().set(k, v);
    for (const auto& [k, v] : overrides.dict_items().entries()) merged.dict_items().set(k, v);
    return merged;
}

}  // namespace lazyattn::tokenizer
