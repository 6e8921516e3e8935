// Chat templates: ChatML (SmolLM2, Qwen) and Llama-3, chosen by recognising the GGUF's
// tokenizer.chat_template, or named explicitly. Rendering matches what the Jinja template in the
// model file produces for the same messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::tokenizer {

enum class ChatTemplateKind { kChatML, kLlama3 };

struct ChatMessage {
    std::string role;     // "system", "user", "assistant"
    std::string content;
};

// Recognises a Jinja chat template by its markers; kUnsupported names what was not recognised.
Expected<ChatTemplateKind> detect_chat_template(std::string_view jinja_template);
// "chatml" or "llama3"; kInvalidArgument otherwise.
Expected<ChatTemplateKind> chat_template_from_name(std::string_view name);
const char* chat_template_name(ChatTemplateKind kind);

struct ChatTemplate {
    ChatTemplateKind kind = ChatTemplateKind::kChatML;
    // ChatML templates (SmolLM2's) insert this system message when the first message is not a
    // system message; empty for templates that do not.
    std::string default_system;

    // Renders messages; with add_generation_prompt, ends with the assistant header.
    std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
};

// Detects the kind from the Jinja source and extracts its default system message, if any.
Expected<ChatTemplate> chat_template_from_jinja(std::string_view jinja_template);

// The template of a model file (tokenizer.chat_template); kNotFound when the file has none.
Expected<ChatTemplate> chat_template_from_gguf(const loader::GgufFile& file);

}  // namespace lazyattn::tokenizer
