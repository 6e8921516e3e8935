// The built-in formats as Jinja. Most formats are "each role opens and closes its turn with fixed
// text" and are generated from a table (per_role); the few with state (a system message merged
// into the next user turn, a turn left open across messages) are written out.
#include "tokenizer/builtin_chat_templates.h"

#include <algorithm>

namespace lazyattn::tokenizer {
namespace {

// `text` as a Jinja string literal.
std::string lit(std::string_view text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\\' || c == '\'') out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out.push_back(c);
    }
    out.push_back('\'');
    return out;
}

constexpr const char* kContent = "message['content']";
constexpr const char* kTrimmed = "(message['content'] | trim)";
constexpr const char* kRole = "message['role']";

// One role's turn: open + content + close, all Jinja expressions.
struct Turn {
    std::string role;  // "" for every role not listed before it
    std::string open;
    std::string close;
    bool trim = false;
};

std::string out(const std::string& expression) { return "{{- " + expression + " -}}"; }

std::string generation(std::string_view prompt) {
    if (prompt.empty()) return "";
    return "{%- if add_generation_prompt -%}" + out(lit(prompt)) + "{%- endif -%}";
}

// Messages in order, each as its role's Turn (a role without one is left out), then the
// generation prompt; `before` is written first.
std::string per_role(const std::vector<Turn>& turns, std::string_view prompt, std::string_view before = "") {
    std::string s;
    if (!before.empty()) s += out(lit(before));
    s += "{%- for message in messages -%}";
    for (size_t i = 0; i < turns.size(); ++i) {
        const Turn& t = turns[i];
        if (t.role.empty()) {
            s += i == 0 ? "{%- if true -%}" : "{%- else -%}";
        } else {
            s += std::string(i == 0 ? "{%- if " : "{%- elif ") + kRole + " == " + lit(t.role) + " -%}";
        }
        s += out(t.open + " + " + (t.trim ? kTrimmed : kContent) + " + " + t.close);
    }
    s += "{%- endif -%}{%- endfor -%}";
    return s + generation(prompt);
}

// Every role alike: open + role + middle + content + close.
std::string role_named(std::string_view open, std::string_view middle, std::string_view close, std::string_view prompt,
                       bool trim = false) {
    return per_role({{"", lit(open) + " + " + kRole + " + " + lit(middle), lit(close), trim}}, prompt);
}

Turn turn(std::string role, std::string_view open, std::string_view close, bool trim = false) {
    return {std::move(role), lit(open), lit(close), trim};
}

// Llama-2: one [INST] turn holds the system message and the user's; an assistant reply closes it.
std::string llama2(bool system_supported, bool bos_inside_history, bool strip) {
    const std::string content = strip ? kTrimmed : kContent;
    std::string s = "{{- '[INST] ' -}}{%- set ns = namespace(inside=true) -%}{%- for message in messages -%}";
    s += "{%- if not ns.inside -%}{%- set ns.inside = true -%}" +
         out(lit(bos_inside_history ? "<s>[INST] " : "[INST] ")) + "{%- endif -%}";
    s += "{%- if message['role'] == 'system' -%}";
    s += system_supported ? out(lit("<<SYS>>\n") + " + " + content + " + " + lit("\n<</SYS>>\n\n"))
                          : out(content + " + " + lit("\n"));
    s += "{%- elif message['role'] == 'user' -%}" + out(content + " + ' [/INST]'");
    s += "{%- else -%}" + out(content + " + '</s>'") + "{%- set ns.inside = false -%}{%- endif -%}{%- endfor -%}";
    return s;
}

// Mistral v1/v3/v3-tekken: [INST] opens before a system or user message when no turn is open.
std::string mistral_v1_v3(std::string_view leading, std::string_view trailing, bool trim_assistant) {
    std::string s = "{%- set ns = namespace(inside=false) -%}{%- for message in messages -%}";
    s += "{%- if not ns.inside -%}" + out(lit(std::string(leading) + "[INST]" + std::string(trailing))) +
         "{%- set ns.inside = true -%}{%- endif -%}";
    s += "{%- if message['role'] == 'system' -%}" + out(std::string(kContent) + " + " + lit("\n\n"));
    s += "{%- elif message['role'] == 'user' -%}" +
         out(std::string(kContent) + " + " + lit(std::string(leading) + "[/INST]"));
    s += "{%- else -%}" + out(lit(trailing) + " + " + (trim_assistant ? kTrimmed : kContent) + " + '</s>'") +
         "{%- set ns.inside = false -%}{%- endif -%}{%- endfor -%}";
    return s;
}

std::string mistral_v7(std::string_view space) {
    return per_role({turn("system", "[SYSTEM_PROMPT]" + std::string(space), "[/SYSTEM_PROMPT]"),
                     turn("user", "[INST]" + std::string(space), "[/INST]"), turn("", space, "</s>")},
                    "");
}

// Gemma and Orion have no system role: the system text joins the next user turn.
std::string gemma() {
    return "{%- set ns = namespace(system='') -%}{%- for message in messages -%}"
           "{%- if message['role'] == 'system' -%}{%- set ns.system = ns.system + (message['content'] | trim) -%}"
           "{%- else -%}{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
           "{{- '<start_of_turn>' + role + '\\n' -}}"
           "{%- if ns.system and role != 'model' -%}{{- ns.system + '\\n\\n' -}}{%- set ns.system = '' -%}{%- endif -%}"
           "{{- (message['content'] | trim) + '<end_of_turn>\\n' -}}{%- endif -%}{%- endfor -%}" +
           generation("<start_of_turn>model\n");
}

std::string orion() {
    return "{%- set ns = namespace(system='') -%}{%- for message in messages -%}"
           "{%- if message['role'] == 'system' -%}{%- set ns.system = ns.system + message['content'] -%}"
           "{%- elif message['role'] == 'user' -%}{{- 'Human: ' -}}"
           "{%- if ns.system -%}{{- ns.system + '\\n\\n' -}}{%- set ns.system = '' -%}{%- endif -%}"
           "{{- message['content'] + '\\n\\nAssistant: </s>' -}}"
           "{%- else -%}{{- message['content'] + '</s>' -}}{%- endif -%}{%- endfor -%}";
}

std::string openchat() {
    return per_role(
        {turn("system", "", "<|end_of_turn|>"),
         {"", "'GPT4 Correct ' + (message['role'][:1] | upper) + message['role'][1:] + ': '", lit("<|end_of_turn|>")}},
        "GPT4 Correct Assistant:");
}

std::string vicuna(bool orca) {
    return per_role({orca ? turn("system", "SYSTEM: ", "\n") : turn("system", "", "\n\n"), turn("user", "USER: ", "\n"),
                     turn("assistant", "ASSISTANT: ", "</s>\n")},
                    "ASSISTANT:");
}

// RWKV World: the model's end of turn is "\n\n". The assistant's turn opens only with the
// generation prompt (the format's own template does the same).
std::string rwkv_world() {
    return per_role({turn("system", "System: ", "\n\n", true), turn("user", "User: ", "\n\n", true),
                     turn("assistant", "Assistant: ", "\n\n", true)},
                    "Assistant:");
}

std::string granite_3() {
    return "{%- for message in messages -%}{{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' -}}"
           "{%- if message['role'] == 'assistant_tool_call' -%}{{- '<|tool_call|>' -}}{%- endif -%}"
           "{{- message['content'] + '<|end_of_text|>\\n' -}}{%- endfor -%}" +
           generation("<|start_of_role|>assistant<|end_of_role|>");
}

std::string granite_4() {
    return per_role(
        {turn("assistant_tool_call", "<|start_of_role|>assistant<|end_of_role|><|tool_call|>", "<|end_of_text|>\n"),
         {"", "'<|start_of_role|>' + message['role'] + '<|end_of_role|>'", lit("<|end_of_text|>\n")}},
        "<|start_of_role|>assistant<|end_of_role|>");
}

// A leading system message is written bare; the rest by role.
std::string gigachat() {
    return "{%- set has_system = messages | length > 0 and messages[0]['role'] == 'system' -%}"
           "{%- if has_system -%}{{- '<s>' + messages[0]['content'] + '<|message_sep|>' -}}"
           "{%- else -%}{{- '<s>' -}}{%- endif -%}"
           "{%- for message in messages -%}{%- if not (loop.first and has_system) -%}"
           "{%- if message['role'] == 'user' -%}{{- 'user<|role_sep|>' + message['content'] + "
           "'<|message_sep|>available functions<|role_sep|>[]<|message_sep|>' -}}"
           "{%- elif message['role'] == 'assistant' -%}"
           "{{- 'assistant<|role_sep|>' + message['content'] + '<|message_sep|>' -}}"
           "{%- endif -%}{%- endif -%}{%- endfor -%}" +
           generation("assistant<|role_sep|>");
}

// Bailing (Ling): roles in capitals, the user's as HUMAN.
std::string bailing(std::string_view close, std::string_view prompt, bool default_system) {
    std::string s;
    if (default_system) {
        s += "{%- if not (messages | length > 0 and messages[0]['role'] == 'system') -%}"
             "{{- '<role>SYSTEM</role>detailed thinking off<|role_end|>' -}}{%- endif -%}";
    }
    s += "{%- for message in messages -%}"
         "{{- '<role>' + ('HUMAN' if message['role'] == 'user' else (message['role'] | upper)) + '</role>' + "
         "message['content'] + " +
         lit(close) + " -}}{%- endfor -%}";
    return s + generation(prompt);
}

std::string smolvlm() {
    return per_role({turn("system", "", "\n\n"), turn("user", "User: ", "<end_of_utterance>\n"),
                     turn("", "Assistant: ", "<end_of_utterance>\n")},
                    "Assistant:", "<|im_start|>");
}

std::string hunyuan_dense() {
    return "{%- for message in messages -%}"
           "{%- if loop.first and message['role'] == 'system' -%}"
           "{{- message['content'] + '<｜hy_place▁holder▁no▁3｜>' -}}{%- endif -%}"
           "{%- if message['role'] == 'assistant' -%}"
           "{{- '<｜hy_Assistant｜>' + message['content'] + '<｜hy_place▁holder▁no▁2｜>' -}}"
           "{%- elif message['role'] == 'user' -%}{{- '<｜hy_User｜>' + message['content'] + '<｜hy_Assistant｜>' -}}"
           "{%- endif -%}{%- endfor -%}";
}

std::string hunyuan_vl() {
    return "{{- '<｜hy_begin▁of▁sentence｜>' -}}{%- for message in messages -%}"
           "{%- if loop.first and message['role'] == 'system' -%}"
           "{{- message['content'] + '<｜hy_place▁holder▁no▁3｜>' -}}"
           "{%- elif message['role'] == 'user' -%}{{- message['content'] + '<｜hy_User｜>' -}}"
           "{%- elif message['role'] == 'assistant' -%}{{- message['content'] + '<｜hy_Assistant｜>' -}}"
           "{%- endif -%}{%- endfor -%}";
}

std::string kimi_k2() {
    return "{%- for message in messages -%}"
           "{%- if message['role'] == 'system' -%}{{- '<|im_system|>system<|im_middle|>' -}}"
           "{%- elif message['role'] == 'user' -%}{{- '<|im_user|>user<|im_middle|>' -}}"
           "{%- elif message['role'] == 'assistant' -%}{{- '<|im_assistant|>assistant<|im_middle|>' -}}"
           "{%- elif message['role'] == 'tool' -%}{{- '<|im_system|>tool<|im_middle|>' -}}{%- endif -%}"
           "{{- message['content'] + '<|im_end|>' -}}{%- endfor -%}" +
           generation("<|im_assistant|>assistant<|im_middle|>");
}

// Pangu: Chinese role names between [unused9] and [unused10]; an empty system turn comes first
// when the conversation has none.
std::string pangu_embedded() {
    return "{%- for message in messages -%}"
           "{%- if loop.first and message['role'] != 'system' -%}{{- '[unused9]系统：[unused10]' -}}{%- endif -%}"
           "{%- set names = {'system': '系统', 'user': '用户', 'assistant': '助手', 'tool': '工具', "
           "'function': '方法'} -%}"
           "{%- if message['role'] in names -%}"
           "{{- '[unused9]' + names[message['role']] + '：' + message['content'] + '[unused10]' -}}"
           "{%- endif -%}{%- endfor -%}" +
           generation("[unused9]助手：");
}

std::vector<BuiltinChatTemplate> make_builtins() {
    const std::string exaone3 =
        per_role({turn("system", "[|system|]", "[|endofturn|]\n", true), turn("user", "[|user|]", "\n", true),
                  turn("assistant", "[|assistant|]", "[|endofturn|]\n", true)},
                 "[|assistant|]");
    std::vector<BuiltinChatTemplate> t = {
        {"bailing", bailing("", "<role>ASSISTANT</role>", false)},
        {"bailing-think", bailing("", "<role>ASSISTANT</role><think>", false)},
        {"bailing2", bailing("<|role_end|>", "<role>ASSISTANT</role>", true)},
        {"chatglm3", per_role({{"", "'<|' + message['role'] + '|>\\n '", "''"}}, "<|assistant|>", "[gMASK]sop")},
        {"chatglm4", per_role({{"", "'<|' + message['role'] + '|>\\n'", "''"}}, "<|assistant|>\n", "[gMASK]<sop>")},
        {"chatml", role_named("<|im_start|>", "\n", "<|im_end|>\n", "<|im_start|>assistant\n")},
        {"command-r",
         per_role({turn("system", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>", true),
                   turn("user", "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>", true),
                   turn("assistant", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>", true)},
                  "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>")},
        {"deepseek", per_role({turn("system", "", ""), turn("user", "### Instruction:\n", "\n"),
                               turn("assistant", "### Response:\n", "\n<|EOT|>\n")},
                              "### Response:\n")},
        {"deepseek-ocr", per_role({turn("", "", "")}, "")},
        {"deepseek2", per_role({turn("system", "", "\n\n"), turn("user", "User: ", "\n\n"),
                                turn("assistant", "Assistant: ", "<｜end▁of▁sentence｜>")},
                               "Assistant:")},
        {"deepseek3", per_role({turn("system", "", "\n\n"), turn("user", "<｜User｜>", ""),
                                turn("assistant", "<｜Assistant｜>", "<｜end▁of▁sentence｜>")},
                               "<｜Assistant｜>")},
        {"exaone-moe", per_role({turn("system", "<|system|>\n", "<|endofturn|>\n", true),
                                 turn("user", "<|user|>\n", "<|endofturn|>\n", true),
                                 turn("assistant", "<|assistant|>\n", "<|endofturn|>\n", true),
                                 turn("tool", "<|tool|>\n", "<|endofturn|>\n", true)},
                                "<|assistant|>\n")},
        {"exaone3", exaone3},
        {"exaone4",
         per_role({turn("system", "[|system|]", "[|endofturn|]\n", true), turn("user", "[|user|]", "\n", true),
                   turn("assistant", "[|assistant|]", "[|endofturn|]\n", true),
                   turn("tool", "[|tool|]", "[|endofturn|]\n", true)},
                  "[|assistant|]")},
        {"falcon3", role_named("<|", "|>\n", "\n", "<|assistant|>\n")},
        {"gemma", gemma()},
        {"gigachat", gigachat()},
        {"glmedge", role_named("<|", "|>\n", "", "<|assistant|>")},
        {"gpt-oss", per_role({turn("assistant", "<|start|>assistant<|message|>", "<|return|>"),
                              {"", "'<|start|>' + message['role'] + '<|message|>'", lit("<|end|>")}},
                             "<|start|>assistant")},
        {"granite", granite_3()},
        {"granite-4.0", granite_4()},
        {"granite-4.1", granite_4()},
        {"grok-2", per_role({turn("system", "System: ", "<|separator|>\n\n", true),
                             turn("user", "Human: ", "<|separator|>\n\n", true),
                             turn("assistant", "Assistant: ", "<|separator|>\n\n")},
                            "Assistant:")},
        {"hunyuan-dense", hunyuan_dense()},
        {"hunyuan-moe", per_role({turn("system", "<|startoftext|>", "<|extra_4|>"), turn("assistant", "", "<|eos|>"),
                                  turn("", "<|startoftext|>", "<|extra_0|>")},
                                 "")},
        {"hunyuan-vl", hunyuan_vl()},
        {"kimi-k2", kimi_k2()},
        {"llama2", llama2(false, false, false)},
        {"llama2-sys", llama2(true, false, false)},
        {"llama2-sys-bos", llama2(true, true, false)},
        {"llama2-sys-strip", llama2(true, false, true)},
        {"llama3", role_named("<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>",
                              "<|start_header_id|>assistant<|end_header_id|>\n\n", true)},
        {"llama4", role_named("<|header_start|>", "<|header_end|>\n\n", "<|eot|>",
                              "<|header_start|>assistant<|header_end|>\n\n", true)},
        {"megrez", role_named("<|role_start|>", "<|role_end|>", "<|turn_end|>", "<|role_start|>assistant<|role_end|>")},
        {"minicpm", per_role({turn("user", "<用户>", "<AI>", true), turn("", "", "", true)}, "")},
        {"mistral-v1", mistral_v1_v3(" ", " ", false)},
        {"mistral-v3", mistral_v1_v3("", " ", true)},
        {"mistral-v3-tekken", mistral_v1_v3("", "", false)},
        {"mistral-v7", mistral_v7(" ")},
        {"mistral-v7-tekken", mistral_v7("")},
        {"monarch",
         "{%- for message in messages -%}{%- if not loop.first -%}{{- '<s>' -}}{%- endif -%}"
         "{{- message['role'] + '\\n' + message['content'] + '</s>\\n' -}}{%- endfor -%}" +
             generation("<s>assistant\n")},
        {"openchat", openchat()},
        {"orion", orion()},
        {"pangu-embedded", pangu_embedded()},
        // Phi-3's own template ends a conversation without the generation prompt with EOS.
        {"phi3", per_role({{"", "'<|' + message['role'] + '|>\\n'", lit("<|end|>\n")}}, "") +
                     "{%- if add_generation_prompt -%}{{- '<|assistant|>\\n' -}}{%- else -%}{{- eos_token -}}"
                     "{%- endif -%}"},
        {"phi4", role_named("<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>")},
        {"rwkv-world", rwkv_world()},
        {"seed_oss", per_role({turn("assistant", "<seed:bos>assistant\n", "<seed:eos>", true),
                               {"", "'<seed:bos>' + message['role'] + '\\n'", lit("<seed:eos>")}},
                              "<seed:bos>assistant\n")},
        {"smolvlm", smolvlm()},
        {"solar-open", role_named("<|begin|>", "<|content|>", "<|end|>", "<|begin|>assistant")},
        {"vicuna", vicuna(false)},
        {"vicuna-orca", vicuna(true)},
        {"yandex", per_role({turn("user", " Пользователь: ", "\n\n"), turn("assistant", " Ассистент: ", "\n\n")},
                            " Ассистент:[SEP]")},
        {"zephyr", role_named("<|", "|>\n", "<|endoftext|>\n", "<|assistant|>\n")},
    };
    return t;
}

}  // namespace

const std::vector<BuiltinChatTemplate>& builtin_chat_templates() {
    static const std::vector<BuiltinChatTemplate> templates = make_builtins();
    return templates;
}

const BuiltinChatTemplate* find_builtin_chat_template(std::string_view name) {
    const auto& all = builtin_chat_templates();
    auto it = std::find_if(all.begin(), all.end(), [&](const BuiltinChatTemplate& t) { return t.name == name; });
    return it == all.end() ? nullptr : &*it;
}

std::string builtin_chat_template_names() {
    std::string names;
    for (const auto& t : builtin_chat_templates()) names += (names.empty() ? "" : ", ") + t.name;
    return names;
}

}  // namespace lazyattn::tokenizer
