#include "server/tool_calls/tool_format.h"

#include <algorithm>
#include <array>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::server::tool_calls {
namespace {

// The one table: family, name, open, close, list, arguments key, second opening, name[ARGS]
// calls, 9-character ids.
constexpr std::array<FamilySyntax, 6> kFamilies = {{
    {ToolFamily::kHermes, "hermes", "<tool_call>", "</tool_call>", false, "arguments", "", false, false},
    {ToolFamily::kSmolLM2, "smollm2", "<tool_call>", "</tool_call>", true, "arguments", "", false, false},
    {ToolFamily::kLlama3, "llama3", "", "", false, "parameters", "<|python_tag|>", false, false},
    {ToolFamily::kMistral, "mistral", "[TOOL_CALLS]", "", true, "arguments", "", false, true},
    {ToolFamily::kMistralArgs, "mistral_args", "[TOOL_CALLS]", "", false, "arguments", "", true, true},
    {ToolFamily::kPhi, "phi", "<|tool_call|>", "<|/tool_call|>", true, "arguments", "", false, false},
}};

// Markers in a template's text, first match wins: the call markup a template writes is the
// surest sign of its family; the chat shape decides for templates that write no calls.
struct Marker {
    std::string_view text;
    ToolFamily family;
};
constexpr std::array<Marker, 9> kMarkers = {{
    {"[ARGS]", ToolFamily::kMistralArgs},  // before [TOOL_CALLS]: these templates write both
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

std::shared_ptr<const std::vector<int32_t>> control_markers(ToolFamily family, const tokenizer::Tokenizer& tok) {
    const FamilySyntax& s = syntax_of(family);
    std::vector<int32_t> ids;
    for (std::string_view marker :
         {std::string_view(s.open), std::string_view(s.close), std::string_view(s.alt_open),
          std::string_view(s.named_args ? "[ARGS]" : ""), std::string_view(s.named_args ? "[CALL_ID]" : "")}) {
        if (marker.empty()) continue;
        const auto id = tok.find_token(marker);
        // A control token decodes to "" unless rendered; a token of plain text needs no help.
        if (id && tok.token_to_piece(*id, false).empty() && tok.token_to_piece(*id, true) == marker) ids.push_back(*id);
    }
    if (ids.empty()) return nullptr;
    std::sort(ids.begin(), ids.end());
    return std::make_shared<const std::vector<int32_t>>(std::move(ids));
}

std::string write_call(ToolFamily family, const std::string& name, const std::string& arguments) {
    const FamilySyntax& s = syntax_of(family);
    const std::string object = "{\"name\": \"" + name + "\", \"" + s.arguments + "\": " + arguments + "}";
    switch (family) {
        case ToolFamily::kHermes:
            return "<tool_call>\n" + object + "\n</tool_call>";
        case ToolFamily::kLlama3:
            return object;
        case ToolFamily::kMistralArgs:
            return std::string(s.open) + name + "[ARGS]" + arguments;
        default:
            return std::string(s.open) + "[" + object + "]" + s.close;
    }
}

}  // namespace lazyattn::server::tool_calls
