// Chat templates. A model's own Jinja template (the GGUF's tokenizer.chat_template, a .jinja file
// named with --chat-template, or a template's text given inline) is rendered by lazyattn's Jinja
// engine exactly as Hugging Face renders it (jinja_chat_template.h); "chatml" and "llama3" select
// two templates rendered natively, and llama-server's other built-in names select lazyattn's own
// Jinja text for that format (builtin_chat_templates.h). Either way the result is ChatPieces that
// keep the template's special tokens apart from what clients wrote.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "template/value.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::tokenizer {

enum class ChatTemplateKind { kChatML, kLlama3, kJinja };

class JinjaChatTemplate;

// A tool call an assistant message carries (OpenAI's message.tool_calls), rendered by templates
// that know tools as {"id", "type": "function", "function": {"name", "arguments"}}: arguments
// as a dict when the JSON text holds an object (templates write `arguments | tojson`).
struct ChatToolCall {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text
};

struct ChatMessage {
    std::string role;  // "system", "user", "assistant", "tool"
    std::string content;
    std::vector<ChatToolCall> tool_calls = {};  // assistant: the calls it made
    std::string tool_call_id = {};              // tool: the call this result answers
    std::string name = {};                      // tool: the function's name (templates that print it)
};

// Recognises a Jinja chat template by its markers; kUnsupported names what was not recognised.
Expected<ChatTemplateKind> detect_chat_template(std::string_view jinja_template);
// "chatml" or "llama3"; kInvalidArgument otherwise.
Expected<ChatTemplateKind> chat_template_from_name(std::string_view name);
const char* chat_template_name(ChatTemplateKind kind);

// A piece of rendered chat: a special token the template writes (its text, e.g. "<|im_end|>"),
// or plain text, which is the template's own text or a message's content.
struct ChatPiece {
    std::string text;
    bool special = false;  // only the template's markup; never a message's content
    int32_t message = -1;  // index of the message whose content this is; -1 for template text
};

// How one conversation is rendered (a request's add_generation_prompt, continue_final_message,
// chat_template_kwargs).
struct ChatRenderOptions {
    bool add_generation_prompt = true;
    // The last message (the assistant's, in practice) is continued rather than closed: the
    // messages before it are rendered with the generation prompt and its content follows as it
    // is (llama-server's assistant prefill, vLLM's continue_final_message).
    bool continue_final_message = false;
    // Extra template variables (a dict, e.g. {"enable_thinking": false}); none: nothing extra.
    // Each overrides the template's default of the same name (ChatTemplate::default_kwargs).
    tmpl::Value kwargs;
    // The template's `tools` variable (a list of {"type": "function", "function": {...}});
    // undefined: no tools (server/tool_calls/ decides what a template sees).
    tmpl::Value tools;
};

struct ChatTemplate {
    ChatTemplateKind kind = ChatTemplateKind::kChatML;
    // ChatML templates (SmolLM2's) insert this system message when the first message is not a
    // system message; empty for templates that do not.
    std::string default_system;
    std::shared_ptr<const JinjaChatTemplate> jinja;  // kJinja
    std::string origin;                              // where it came from, for `lazyattn info` and logs
    std::string source = {};  // the Jinja text (kJinja; "" for the native renderers): tool-call families read it
    // Variables every render passes (--chat-template-kwargs: a dict, or none); a request's
    // kwargs override them name by name. Jinja templates only: the native renderers have none.
    tmpl::Value default_kwargs = {};

    // Renders messages; with add_generation_prompt, ends with the assistant header. Errors come
    // only from Jinja templates (the template raised, e.g. a role it does not support).
    Expected<std::string> apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    // The same text as pieces (apply() is their concatenation), so a tokenizer can tell the
    // template's special tokens from text a client sent.
    Expected<std::vector<ChatPiece>> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    // With a request's options. Continuing the final message: its content is the last piece,
    // carrying its message index, after the generation prompt of the messages before it.
    Expected<std::vector<ChatPiece>> render(const std::vector<ChatMessage>& messages,
                                            const ChatRenderOptions& options) const;
};

// Tokens of rendered pieces: each special piece becomes its token, and the text between special
// pieces is tokenized as one run with no special-token parsing. That equals tokenizing the whole
// rendered text with special tokens parsed, except that a special token's text inside a message
// stays text (a client cannot close a turn or forge a role). No BOS is added.
std::vector<TokenId> encode_chat(const Tokenizer& tokenizer, const std::vector<ChatPiece>& pieces);

// Recognises a ChatML or Llama-3 template by its markers and renders it natively (extracting
// ChatML's default system message): the built-in renderers behind the names chatml and llama3.
Expected<ChatTemplate> chat_template_from_jinja(std::string_view jinja_template);

// The model file's own template (tokenizer.chat_template), rendered by the Jinja engine with the
// file's bos/eos texts and special tokens; kNotFound when the file has none, kInvalidArgument
// when it does not parse or cannot render a one-message chat.
Expected<ChatTemplate> chat_template_from_gguf(const loader::GgufFile& file);

// The template a command uses: `choice` is "" (the model file's own, or none when it has none),
// "chatml" / "llama3" (rendered natively), another of llama-server's built-in names
// (builtin_chat_templates.h), a template's text (it contains "{%" or "{{", as llama-server takes
// it), or the path of a .jinja file; all but the native two are rendered by the Jinja engine with
// the model's tokens. A value that is none of these is the template's text too (llama-server's
// reading), unless it looks like a path (looks_like_template_path): kInvalidArgument then.
// `default_kwargs` (a dict, or none) becomes the template's default_kwargs; the start-up render
// check uses them, as every request does.
Expected<std::optional<ChatTemplate>> select_chat_template(std::string_view choice, const loader::GgufFile& file,
                                                           const tmpl::Value& default_kwargs = {});
// Whether select_chat_template takes `choice` without a file (a built-in name or inline text).
bool is_builtin_or_inline_chat_template(std::string_view choice);
// Whether `choice` reads as a file's path (it holds a '/' or ends in .jinja): one that does not
// exist is refused. Any other value that is neither a built-in name nor a file is the template's
// text, as llama-server reads every --chat-template value it cannot otherwise place.
bool looks_like_template_path(std::string_view choice);

}  // namespace lazyattn::tokenizer
