#include "server/tool_calls/tool_format.h"

#include <array>

#include "tokenizer/chat_template.h"

namespace lazyattn::server::tool_calls {
namespace {

// The one table: family, name, open, close, list, arguments key, second opening.
constexpr std::array<FamilySyntax, 5> kFamilies = {{
    {ToolFamily::kHermes, "hermes", "<tool_call>", "</tool_call>", false, "arguments", ""},
    {ToolFamily::kSmolLM2, "smollm2", "<tool_call>", "</tool_call>", true, "arguments", ""},
    {ToolFamily::kLlama3, "llama3", "", "", false, "parameters", "<|python_tag|>"},
    {ToolFamily::kMistral, "mistral", "[TOOL_CALLS]", "", true, "arguments", ""},
    {ToolFamily::kPhi, "phi", "<|tool_call|>", "<|/tool_call|>", true, "arguments", ""},
}};

// Markers in a template's text, first match wins: the call markup a template writes is the
// surest sign of its family; the chat shape decides for templates that write no calls.
struct Marker {
    std::string_view text;
    ToolFamily family;
};
constexpr std::array<Marker, 8> kMarkers = {{
    {"[TOOL_CALLS]", ToolFamily::kMistral},
    {"<tool_call>", ToolFamily::kHermes},
    {"<|tool_call|>", ToolFamily::kPhi},
    {"<|python_tag|>", ToolFamily::kLlama3},
    {"SmolLM", ToolFamily::kSmolLM2},
    {"<|start_header_id|>", ToolFamily::kLlama3},
    {"[INST]", ToolFamily::kMistral},
    {"<|im_start|>", ToolFamily::kHermes},
}};

}  // namespace

const FamilySyntax& syntax_of(ToolFamily family) {
    for (const FamilySyntax& f : kFamilies) {
        if (f.family == family) return f;
    }
    return kFamilies[0];
}

const char* family_name(ToolFamily family) { return syntax_of(family).name; }

ToolFormat tool_format_for_text(std::string_view source, bool native_llama3) {
    ToolFormat f;
    if (native_llama3) {
        f.family = ToolFamily::kLlama3;
        return f;
    }
    for (const Marker& m : kMarkers) {
        if (source.find(m.text) != std::string_view::npos) {
            f.family = m.family;
            break;
        }
    }
    // A template that reads `tools` renders the definitions; the others get a system message.
    f.template_renders_tools = source.find("tools") != std::string_view::npos;
    return f;
}

ToolFormat tool_format_for(const tokenizer::ChatTemplate& chat) {
    return tool_format_for_text(chat.source, chat.kind == tokenizer::ChatTemplateKind::kLlama3);
}

std::string write_call(ToolFamily family, const std::string& name, const std::string& arguments) {
    const FamilySyntax& s = syntax_of(family);
    const std::string object = "{\"name\": \"" + name + "\", \"" + s.arguments + "\": " + arguments + "}";
    switch (family) {
        case ToolFamily::kHermes:
            return "<tool_call>\n" + object + "\n</tool_call>";
        case ToolFamily::kLlama3:
            return object;
        default:
            return std::string(s.open) + "[" + object + "]" + s.close;
    }
}

}  // namespace lazyattn::server::tool_calls
