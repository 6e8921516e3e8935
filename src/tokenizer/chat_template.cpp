// The built-in renderers (ChatML, Llama-3: recognised by their markers and rendered to the exact
// text their Jinja produces; ChatML's optional default system message is read out of the Jinja
// source's string literals) and the choice between them and a model's own Jinja template.
#include "tokenizer/chat_template.h"

#include <fstream>
#include <sstream>

#include "core/utf8.h"
#include "loader/gguf_file.h"
#include "tokenizer/builtin_chat_templates.h"
#include "tokenizer/chat_template_kwargs.h"
#include "tokenizer/jinja_chat_template.h"

namespace lazyattn::tokenizer {

using namespace text;  // core/utf8.h, core/byte_unicode.h
namespace {

constexpr std::string_view kChatMLMarker = "<|im_start|>";
constexpr std::string_view kLlama3Marker = "<|start_header_id|>";
constexpr std::string_view kChatMLSystemOpen = "<|im_start|>system\n";
constexpr std::string_view kChatMLEnd = "<|im_end|>";
constexpr std::string_view kLlama3Bos = "<|begin_of_text|>";

// Reads the string literal whose opening quote is at `pos`, applying Jinja's (Python's) escapes;
// advances `pos` past the closing quote.
std::string read_literal(std::string_view src, size_t& pos) {
    const char quote = src[pos++];
    std::string out;
    while (pos < src.size() && src[pos] != quote) {
        char c = src[pos++];
        if (c == '\\' && pos < src.size()) {
            const char e = src[pos++];
            switch (e) {
                case 'n':
                    c = '\n';
                    break;
                case 't':
                    c = '\t';
                    break;
                case 'r':
                    c = '\r';
                    break;
                case '\\':
                case '\'':
                case '"':
                    c = e;
                    break;
                default:
                    out.push_back('\\');
                    c = e;
                    break;
            }
        }
        out.push_back(c);
    }
    ++pos;  // closing quote
    return out;
}

// The string literals inside {{ ... }} and {% ... %} blocks, in order.
std::vector<std::string> jinja_string_literals(std::string_view src) {
    std::vector<std::string> literals;
    bool in_block = false;
    size_t pos = 0;
    while (pos < src.size()) {
        const std::string_view rest = src.substr(pos);
        if (!in_block && (rest.starts_with("{{") || rest.starts_with("{%"))) {
            in_block = true;
            pos += 2;
        } else if (in_block && (rest.starts_with("}}") || rest.starts_with("%}"))) {
            in_block = false;
            pos += 2;
        } else if (in_block && (src[pos] == '\'' || src[pos] == '"')) {
            literals.push_back(read_literal(src, pos));
        } else {
            ++pos;
        }
    }
    return literals;
}

// A literal "<|im_start|>system\n...<|im_end|>" with fixed content is a default system message.
std::string find_default_system(std::string_view jinja) {
    for (const std::string& literal : jinja_string_literals(jinja)) {
        if (!std::string_view(literal).starts_with(kChatMLSystemOpen)) continue;
        const size_t end = literal.find(kChatMLEnd, kChatMLSystemOpen.size());
        if (end == std::string::npos || end == kChatMLSystemOpen.size()) continue;
        return literal.substr(kChatMLSystemOpen.size(), end - kChatMLSystemOpen.size());
    }
    return {};
}

// Python's str.isspace, which Jinja's trim filter (str.strip) uses.
bool is_python_space(char32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

std::string jinja_trim(std::string_view s) {
    size_t first = s.size();
    size_t last = 0;
    for (size_t pos = 0; pos < s.size();) {
        const Utf8Decoded d = decode_utf8_one(s, pos);
        const bool space = d.status == Utf8Status::kOk && is_python_space(d.code_point);
        if (!space) {
            if (first == s.size()) first = pos;
            last = pos + d.length;
        }
        pos += d.length;
    }
    return first == s.size() ? std::string() : std::string(s.substr(first, last - first));
}

// Appends the template's text, splitting out the special tokens it spells (`specials`).
void add_markup(std::vector<ChatPiece>& out, std::string_view text, std::initializer_list<std::string_view> specials) {
    while (!text.empty()) {
        size_t at = text.size();
        std::string_view found;
        for (std::string_view sp : specials) {
            const size_t pos = text.find(sp);
            if (pos < at) {
                at = pos;
                found = sp;
            }
        }
        if (at > 0) out.push_back({std::string(text.substr(0, at)), false, -1});
        if (found.empty()) return;
        out.push_back({std::string(found), true, -1});
        text.remove_prefix(at + found.size());
    }
}

void add_content(std::vector<ChatPiece>& out, std::string content, size_t message) {
    out.push_back({std::move(content), false, int32_t(message)});
}

constexpr std::string_view kLlama3EndHeader = "<|end_header_id|>";
constexpr std::string_view kLlama3Eot = "<|eot_id|>";

std::vector<ChatPiece> render_chatml(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                                     bool add_generation_prompt) {
    std::vector<ChatPiece> out;
    auto markup = [&](std::string_view text) { add_markup(out, text, {kChatMLMarker, kChatMLEnd}); };
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (i == 0 && m.role != "system" && !t.default_system.empty()) {
            markup(std::string(kChatMLSystemOpen) + t.default_system + std::string(kChatMLEnd) + "\n");
        }
        markup(kChatMLMarker);
        out.push_back({m.role + "\n", false, -1});  // a client's role is never parsed
        add_content(out, m.content, i);
        markup(std::string(kChatMLEnd) + "\n");
    }
    if (add_generation_prompt) markup(std::string(kChatMLMarker) + "assistant\n");
    return out;
}

// The official Llama-3 template: BOS text before the first message only, content trimmed.
std::vector<ChatPiece> render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    std::vector<ChatPiece> out;
    auto markup = [&](std::string_view text) {
        add_markup(out, text, {kLlama3Bos, kLlama3Marker, kLlama3EndHeader, kLlama3Eot});
    };
    for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0) markup(kLlama3Bos);
        markup(kLlama3Marker);
        out.push_back({messages[i].role, false, -1});
        markup(std::string(kLlama3EndHeader) + "\n\n");
        add_content(out, jinja_trim(messages[i].content), i);
        markup(kLlama3Eot);
    }
    if (add_generation_prompt)
        markup(std::string(kLlama3Marker) + "assistant" + std::string(kLlama3EndHeader) + "\n\n");
    return out;
}

}  // namespace

Expected<ChatTemplateKind> detect_chat_template(std::string_view jinja_template) {
    if (jinja_template.find(kChatMLMarker) != std::string_view::npos) return ChatTemplateKind::kChatML;
    if (jinja_template.find(kLlama3Marker) != std::string_view::npos) return ChatTemplateKind::kLlama3;
    return unsupported(
        "chat template not recognised: it has neither ChatML's '<|im_start|>' nor Llama-3's "
        "'<|start_header_id|>' markers; name one explicitly (chatml or llama3)");
}

Expected<ChatTemplateKind> chat_template_from_name(std::string_view name) {
    if (name == "chatml") return ChatTemplateKind::kChatML;
    if (name == "llama3") return ChatTemplateKind::kLlama3;
    return invalid_argument("unknown chat template '" + std::string(name) + "'; expected 'chatml' or 'llama3'");
}

const char* chat_template_name(ChatTemplateKind kind) {
    switch (kind) {
        case ChatTemplateKind::kChatML:
            return "chatml";
        case ChatTemplateKind::kLlama3:
            return "llama3";
        case ChatTemplateKind::kJinja:
            return "jinja";
    }
    return "unknown";
}

Expected<std::vector<ChatPiece>> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                                      bool add_generation_prompt) const {
    ChatRenderOptions options;
    options.add_generation_prompt = add_generation_prompt;
    return render(messages, options);
}

Expected<std::vector<ChatPiece>> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                                      const ChatRenderOptions& options) const {
    if (options.continue_final_message && !messages.empty()) {
        // The turns before it, opened for the assistant, then its text as it is: the template
        // never closes it (llama-server and vLLM lay a continued message out this way).
        const std::vector<ChatMessage> before(messages.begin(), messages.end() - 1);
        ChatRenderOptions opened = options;
        opened.continue_final_message = false;
        opened.add_generation_prompt = true;
        LA_ASSIGN_OR_RETURN(std::vector<ChatPiece> pieces, render(before, opened));
        add_content(pieces, messages.back().content, messages.size() - 1);
        return pieces;
    }
    switch (kind) {
        case ChatTemplateKind::kChatML:
            return render_chatml(*this, messages, options.add_generation_prompt);
        case ChatTemplateKind::kLlama3:
            return render_llama3(messages, options.add_generation_prompt);
        case ChatTemplateKind::kJinja:
            if (!jinja) return internal_error("Jinja chat template without a compiled template");
            return jinja->render(messages, options.add_generation_prompt,
                                 merge_template_kwargs(default_kwargs, options.kwargs), options.tools);
    }
    return internal_error("unknown chat template kind");
}

Expected<std::string> ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    LA_ASSIGN_OR_RETURN(const std::vector<ChatPiece> pieces, render(messages, add_generation_prompt));
    std::string out;
    for (const ChatPiece& p : pieces) out += p.text;
    return out;
}

std::vector<TokenId> encode_chat(const Tokenizer& tokenizer, const std::vector<ChatPiece>& pieces) {
    std::vector<TokenId> out;
    std::string run;  // plain text since the last special piece
    auto flush = [&] {
        const auto ids = tokenizer.encode(run, false, false);
        out.insert(out.end(), ids.begin(), ids.end());
        run.clear();
    };
    for (const ChatPiece& p : pieces) {
        if (!p.special) {
            run += p.text;
            continue;
        }
        flush();
        const auto ids = tokenizer.encode(p.text, false, true);
        out.insert(out.end(), ids.begin(), ids.end());
    }
    flush();
    return out;
}

Expected<ChatTemplate> chat_template_from_jinja(std::string_view jinja_template) {
    LA_ASSIGN_OR_RETURN(const ChatTemplateKind kind, detect_chat_template(jinja_template));
    ChatTemplate t;
    t.kind = kind;
    if (kind == ChatTemplateKind::kChatML) t.default_system = find_default_system(jinja_template);
    return t;
}

namespace {

Expected<ChatTemplate> compile_jinja(std::string_view source, const loader::GgufFile& file, std::string origin,
                                     const tmpl::Value& default_kwargs) {
    auto compiled = JinjaChatTemplate::compile(source, chat_template_tokens_from_gguf(file), default_kwargs);
    if (!compiled.ok()) return Status(compiled.status().code(), origin + ": " + compiled.status().message());
    ChatTemplate t;
    t.kind = ChatTemplateKind::kJinja;
    t.jinja = std::move(compiled).value();
    t.origin = std::move(origin);
    t.source = std::string(source);
    t.default_kwargs = default_kwargs;
    return t;
}

constexpr size_t kMaxTemplateFileBytes = 4u << 20;

bool is_inline_template(std::string_view choice) {
    return choice.find("{%") != std::string_view::npos || choice.find("{{") != std::string_view::npos;
}

}  // namespace

Expected<ChatTemplate> chat_template_from_gguf(const loader::GgufFile& file) {
    LA_ASSIGN_OR_RETURN(const std::string jinja, file.get_string("tokenizer.chat_template"));
    return compile_jinja(jinja, file, "the model file's tokenizer.chat_template", {});
}

bool is_builtin_or_inline_chat_template(std::string_view choice) {
    return find_builtin_chat_template(choice) != nullptr || is_inline_template(choice);
}

bool looks_like_template_path(std::string_view choice) {
    const std::string_view ext = ".jinja";
    return choice.find('/') != std::string_view::npos ||
           (choice.size() >= ext.size() && choice.substr(choice.size() - ext.size()) == ext);
}

Expected<std::optional<ChatTemplate>> select_chat_template(std::string_view choice, const loader::GgufFile& file,
                                                           const tmpl::Value& default_kwargs) {
    auto chosen = [](Expected<ChatTemplate> t) -> Expected<std::optional<ChatTemplate>> {
        if (!t.ok()) return t.status();
        return std::optional<ChatTemplate>(std::move(t).value());
    };
    if (choice.empty()) {
        auto own = file.get_string("tokenizer.chat_template");
        if (!own.ok()) return std::optional<ChatTemplate>();
        return chosen(compile_jinja(*own, file, "the model file's tokenizer.chat_template", default_kwargs));
    }
    if (choice == "chatml" || choice == "llama3") {
        ChatTemplate t;
        LA_ASSIGN_OR_RETURN(t.kind, chat_template_from_name(choice));
        t.origin = "--chat-template " + std::string(choice) + " (built in)";
        return std::optional<ChatTemplate>(std::move(t));
    }
    if (const BuiltinChatTemplate* builtin = find_builtin_chat_template(choice)) {
        return chosen(
            compile_jinja(builtin->source, file, "--chat-template " + builtin->name + " (built in)", default_kwargs));
    }
    if (is_inline_template(choice)) {
        if (choice.size() > kMaxTemplateFileBytes) return invalid_argument("inline chat template larger than 4 MiB");
        return chosen(compile_jinja(choice, file, "--chat-template (the template's text)", default_kwargs));
    }
    std::ifstream in{std::string(choice), std::ios::binary};
    if (!in && !looks_like_template_path(choice)) {
        if (choice.size() > kMaxTemplateFileBytes) return invalid_argument("inline chat template larger than 4 MiB");
        return chosen(compile_jinja(choice, file, "--chat-template (taken as the template's text)", default_kwargs));
    }
    if (!in) {
        return invalid_argument("unknown chat template '" + std::string(choice) +
                                "': not a file, not a template's text, and not a built-in name (" +
                                builtin_chat_template_names() + ")");
    }
    std::ostringstream source;
    source << in.rdbuf();
    if (source.str().size() > kMaxTemplateFileBytes) return invalid_argument("chat template file larger than 4 MiB");
    return chosen(compile_jinja(source.str(), file, "--chat-template " + std::string(choice), default_kwargs));
}

}  // namespace lazyattn::tokenizer
