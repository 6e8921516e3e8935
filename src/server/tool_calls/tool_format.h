// The tool-call families: how a model of each writes a call, found from its chat template. One
// table (tool_format.cpp) says, per family, what marks a call in the template's text, how a call
// opens and closes, whether the calls come as a JSON list, and the key of the arguments:
//
//   hermes   <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>  Hermes 2/3, Qwen 2.5/3,
//            and any ChatML template that says nothing else
//   smollm2  <tool_call>[{"name": ..., "arguments": {...}}]</tool_call>     SmolLM2's training format
//   llama3   {"name": ..., "parameters": {...}} as the whole reply, or after <|python_tag|>
//   mistral  [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]                Mistral Nemo
//   mistral_args  [TOOL_CALLS]name[ARGS]{...}, or name[CALL_ID]id[ARGS]{...}, one marker per call:
//            Mistral Small 3.2, Magistral, Ministral 3, Devstral (templates that write [ARGS])
//   phi      <|tool_call|>[{"name": ..., "arguments": {...}}]<|/tool_call|>  Phi-4-mini, Granite
//
// The parser (tool_call_parser.h) reads a call in its family's markers whether it holds one call
// object or a list, with "arguments" or "parameters". Llama 3.1's built-in tools come after
// <|python_tag|> too (builtin_tools.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lazyattn::tokenizer {
struct ChatTemplate;
class Tokenizer;
}  // namespace lazyattn::tokenizer

namespace lazyattn::server::tool_calls {

enum class ToolFamily { kHermes, kSmolLM2, kLlama3, kMistral, kMistralArgs, kPhi };

struct ToolFormat {
    ToolFamily family = ToolFamily::kHermes;
    // The template reads `tools` (renders the definitions itself); otherwise they go in a system
    // message (chat_tools.h).
    bool template_renders_tools = false;
};

// What each family writes (the one table's row).
struct FamilySyntax {
    ToolFamily family;
    const char* name;       // "hermes", ...
    const char* open;       // opens a call ("" for llama3's bare JSON)
    const char* close;      // closes it ("": the JSON value's end closes it)
    bool list;              // the calls inside are a JSON list
    const char* arguments;  // the key of the arguments
    const char* alt_open;   // a second opening (llama3's <|python_tag|>), or ""
    // The call is `name[ARGS]{arguments}` (an optional [CALL_ID]id before [ARGS]), not a JSON
    // object holding its name; `open` comes before each call.
    bool named_args = false;
    // Call ids are 9 letters and digits: the family's templates refuse others in earlier calls.
    bool short_ids = false;
};

const FamilySyntax& syntax_of(ToolFamily family);
const char* family_name(ToolFamily family);

// The family of a template: markers in its Jinja text (tool_format.cpp's table), then its shape
// (ChatML: hermes; SmolLM: smollm2; Llama 3 headers: llama3); hermes when nothing says.
ToolFormat tool_format_for(const tokenizer::ChatTemplate& chat);
// The same from a template's text alone ("" for the native renderers, with `native_llama3`).
ToolFormat tool_format_for_text(std::string_view source, bool native_llama3 = false);

// The family's markers that are control tokens of `tokenizer` (Mistral's [TOOL_CALLS], Llama
// 3.1's <|python_tag|>): the decoder drops a control token's text unless told to show it
// (engine::RagRequest::shown_control_tokens), and the parser must see these. Sorted ids; null
// when none is a control token.
std::shared_ptr<const std::vector<int32_t>> control_markers(ToolFamily family, const tokenizer::Tokenizer& tokenizer);

// One call as its family writes it (an assistant's earlier call, put back in its content when
// the template renders no tool calls). `arguments` is JSON text.
std::string write_call(ToolFamily family, const std::string& name, const std::string& arguments);

}  // namespace lazyattn::server::tool_calls
