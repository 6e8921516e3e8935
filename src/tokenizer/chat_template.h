// Chat templates: ChatML (SmolLM2, Qwen) and Llama-3, chosen by recognising the GGUF's
// tokenizer.chat_template, or named explicitly. Rendering matches what the Jinja template in the
// model file produces for the same messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::tokenizer {

enum class ChatTemplateKind { kChatML, kLlama3 };

struct ChatMessage {
    std::string role;  // "system", "user", "assistant"
    std::string content;
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

struct ChatTemplate {
    ChatTemplateKind kind = ChatTemplateKind::kChatML;
    // ChatML templates (SmolLM2's) insert this system message when the first message is not a
    // system message; empty for templates that do not.
    std::string default_system;

    // Renders messages; with add_generation_prompt, ends with the assistant header.
    std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    // The same text as pieces (apply() is their concatenation), so a tokenizer can tell the
    // template's special tokens from text a client sent.
    std::vector<ChatPiece> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
};

// Tokens of rendered pieces: each special piece becomes its token, and the text between special
// pieces is tokenized as one run with no special-token parsing. That equals tokenizing the whole
// rendered text with special tokens parsed, except that a special token's text inside a message
// stays text (a client cannot close a turn or forge a role). No BOS is added.
std::vector<TokenId> encode_chat(const Tokenizer& tokenizer, const std::vector<ChatPiece>& pieces);

// Detects the kind from the Jinja source and extracts its default system message, if any.
Expected<ChatTemplate> chat_template_from_jinja(std::string_view jinja_template);

// The template of a model file (tokenizer.chat_template); kNotFound when the file has none.
Expected<ChatTemplate> chat_template_from_gguf(const loader::GgufFile& file);

}  // namespace lazyattn::tokenizer
