#include "server/tool_calls/chat_tools.h"

#include <nlohmann/json.hpp>

#include "server/tool_calls/builtin_tools.h"
#include "server/tool_calls/tool_constraint.h"
#include "tokenizer/chat_template_kwargs.h"

namespace lazyattn::server::tool_calls {
namespace {

using json = nlohmann::json;

std::string call_example(ToolFamily family) {
    switch (family) {
        case ToolFamily::kHermes:
            return "<tool_call>\n{\"name\": \"<function name>\", \"arguments\": {<arguments as JSON>}}\n</tool_call>\n"
                   "(one such block per call)";
        case ToolFamily::kSmolLM2:
            return "<tool_call>[{\"name\": \"<function name>\", \"arguments\": {<arguments as JSON>}}]</tool_call>\n"
                   "(the list may hold several calls)";
        case ToolFamily::kLlama3:
            return "{\"name\": \"<function name>\", \"parameters\": {<arguments as JSON>}}\n"
                   "(the JSON object alone, nothing else)";
        case ToolFamily::kMistral:
            return "[TOOL_CALLS][{\"name\": \"<function name>\", \"arguments\": {<arguments as JSON>}}]\n"
                   "(the list may hold several calls)";
        case ToolFamily::kMistralArgs:
            return "[TOOL_CALLS]<function name>[ARGS]{<arguments as JSON>}\n"
                   "(one such call after another)";
        case ToolFamily::kPhi:
            return "<|tool_call|>[{\"name\": \"<function name>\", \"arguments\": {<arguments as "
                   "JSON>}}]<|/tool_call|>\n"
                   "(the list may hold several calls)";
    }
    return "";
}

// Arguments as the family writes them: the client's JSON text when it is JSON, else a string.
std::string arguments_json(const std::string& text) {
    const json parsed = json::parse(text, nullptr, false);
    if (!parsed.is_discarded()) return parsed.dump();
    return json(text).dump();
}

// Earlier calls and results, for a template that renders no tools.
void flatten_tool_turns(GenerationRequest& gen, ToolFamily family) {
    for (size_t i = 0; i < gen.messages.size(); ++i) {
        tokenizer::ChatMessage& m = gen.messages[i];
        if (!m.tool_calls.empty()) {
            for (const tokenizer::ChatToolCall& c : m.tool_calls) {
                if (!m.content.empty()) m.content += "\n";
                m.content += write_call(family, c.name, arguments_json(c.arguments));
            }
            m.tool_calls.clear();
        }
        if (m.role == "tool") {
            m.role = "user";
            // Parts stay as sent (documents_from parts reads them); plain results are tagged.
            if (gen.message_parts[i].empty()) m.content = "<tool_response>\n" + m.content + "\n</tool_response>";
            m.tool_call_id.clear();
            m.name.clear();
        }
    }
}

void add_system_text(GenerationRequest& gen, const std::string& text) {
    if (!gen.messages.empty() && gen.messages[0].role == "system") {
        std::string& content = gen.messages[0].content;
        content += content.empty() ? text : "\n\n" + text;
        return;
    }
    gen.messages.insert(gen.messages.begin(), tokenizer::ChatMessage{"system", text});
    gen.message_parts.insert(gen.message_parts.begin(), std::vector<ContentPart>{});
    // A message named by index moved one place on.
    if (gen.documents_message && gen.documents_message->first == DocumentsFrom::Message::kIndex) {
        gen.documents_message->second += 1;
    }
}

}  // namespace

std::string tool_instructions(const ToolRequest& r) {
    std::string s =
        "You can call functions to answer. Each function is described by a JSON schema inside <tools></tools>:\n"
        "<tools>\n";
    for (const json& t : r.openai_tools()) s += t.at("function").dump() + "\n";
    s += "</tools>\n";
    if (r.choice == ToolChoice::kNamed) {
        s += "Call the function " + r.named + ".\n";
    } else if (r.choice == ToolChoice::kRequired) {
        s += "Answer with one or more function calls.\n";
    } else {
        s += "When a function helps, call it; otherwise answer in plain text.\n";
    }
    s += "Write a call exactly like this:\n" + call_example(r.format.family);
    if (!r.parallel) s += "\nCall at most one function.";
    return s;
}

std::optional<ApiError> prepare_chat_tools(GenerationRequest& gen, const tokenizer::ChatTemplate& chat) {
    const ToolFormat format = tool_format_for(chat);
    if (!format.template_renders_tools) flatten_tool_turns(gen, format.family);
    if (!gen.tools) return std::nullopt;
    auto tools = std::make_shared<ToolRequest>(*gen.tools);
    tools->format = format;
    gen.tools = tools;
    if (!tools->active()) return std::nullopt;  // tool_choice none: neither rendered nor parsed
    if (format.template_renders_tools) {
        auto value = tokenizer::template_value_from_json(tools->openai_tools(), "tools");
        if (!value.ok()) return invalid_request(value.status().message(), "tools", "invalid_value");
        gen.template_tools = std::move(value).value();
        // Llama 3.1's template announces its built-in tools when told of them (builtin_tools.h);
        // a request's own builtin_tools kwarg still wins.
        const std::vector<std::string> builtin = template_builtin_tools(*tools);
        if (format.family == ToolFamily::kLlama3 && !builtin.empty() &&
            chat.source.find("builtin_tools") != std::string::npos) {
            auto told = tokenizer::template_value_from_json(json{{"builtin_tools", builtin}}, "tools");
            if (!told.ok()) return invalid_request(told.status().message(), "tools", "invalid_value");
            gen.chat_template_kwargs = tokenizer::merge_template_kwargs(*told, gen.chat_template_kwargs);
        }
    } else {
        add_system_text(gen, tool_instructions(*tools));
    }
    if (tools->forced()) {
        if (gen.constraint) {
            return invalid_request("'" + tools->choice_field + "' forces a tool call, and '" + gen.constraint->field +
                                       "' constrains the output too; a request may use one of them",
                                   tools->choice_field, "invalid_value");
        }
        gen.constraint = tool_constraint(*tools);
    }
    return std::nullopt;
}

}  // namespace lazyattn::server::tool_calls
