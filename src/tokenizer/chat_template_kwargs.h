// Extra chat template variables: a request's `chat_template_kwargs` and the server's
// --chat-template-kwargs (e.g. {"enable_thinking": false}), as llama-server and vLLM pass them to
// the template. JSON values become template values (objects keep their key order); the names the
// renderer sets itself are refused, and the whole is bounded, since a request sends it.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "template/value.h"

namespace lazyattn::tokenizer {

// Bounds on one set of kwargs: names, nesting, and the JSON text's bytes.
inline constexpr size_t kMaxTemplateKwargs = 64;
inline constexpr int kMaxTemplateKwargsDepth = 16;
inline constexpr size_t kMaxTemplateKwargsBytes = 64 * 1024;

// A JSON object -> a dict of variables. kInvalidArgument (naming `field`, and the key at fault)
// for a non-object, a reserved name (messages, add_generation_prompt, bos_token, eos_token,
// tools, documents), or a value past the bounds.
Expected<tmpl::Value> chat_template_kwargs_from_json(const nlohmann::json& object, std::string_view field);
// Any JSON value as a template value (nested at most kMaxTemplateKwargsDepth; `where` names it
// in errors): tools and tool-call arguments as templates read them.
Expected<tmpl::Value> template_value_from_json(const nlohmann::json& value, std::string_view where);
// The same from JSON text (--chat-template-kwargs).
Expected<tmpl::Value> chat_template_kwargs_from_text(std::string_view text, std::string_view field);

// The server's defaults: --chat-template-kwargs' JSON text ("" = none), with enable_thinking set
// when `enable_thinking` says (--reasoning on|off, --reasoning-budget 0); undefined when nothing
// is set. kInvalidArgument naming --chat-template-kwargs.
Expected<tmpl::Value> server_template_kwargs(std::string_view json_text, std::optional<bool> enable_thinking);

// `overrides` (a dict, or not a dict: nothing) over `defaults` name by name; either may be
// undefined. Neither is changed (dicts are shared by reference, so no render writes to one).
tmpl::Value merge_template_kwargs(const tmpl::Value& defaults, const tmpl::Value& overrides);

}  // namespace lazyattn::tokenizer
