// llama-server's built-in chat template names (`--chat-template chatml|llama3|command-r|...`, the
// list its common/arg.cpp help prints), each with lazyattn's own Jinja text for that format,
// written from the format's public description. The text is rendered by the same Jinja engine as
// a model's own template, so a named format and a model file's template behave alike (special
// tokens only from the template's text, contents located for the RAG layout).
//
// Like llama-server's built-ins, these templates write no BOS (the tokenizer adds it when the
// model wants one) and ignore roles the format has no place for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazyattn::tokenizer {

struct BuiltinChatTemplate {
    std::string name;    // as llama-server spells it
    std::string source;  // Jinja text
};

// Every built-in, in llama-server's (alphabetical) order.
const std::vector<BuiltinChatTemplate>& builtin_chat_templates();
// nullptr when `name` is not a built-in name.
const BuiltinChatTemplate* find_builtin_chat_template(std::string_view name);
// "bailing, bailing-think, ..." for messages that name the choices.
std::string builtin_chat_template_names();

}  // namespace lazyattn::tokenizer
