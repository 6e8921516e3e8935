#include "tokenizer/jinja_chat_template.h"

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>

#include "loader/gguf_file.h"
#include "template/python_text.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/chat_template_kwargs.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::tokenizer {
namespace {

constexpr std::string_view kEscapeOpen = "\xEE\x80\x80";   // U+E000
constexpr std::string_view kEscapeClose = "\xEE\x80\x81";  // U+E001

using ByteIndex = std::array<std::vector<uint32_t>, 256>;

ByteIndex index_by_first_byte(const std::vector<std::string>& texts) {
    ByteIndex index;
    for (uint32_t i = 0; i < texts.size(); ++i) {
        if (!texts[i].empty()) index[static_cast<unsigned char>(texts[i][0])].push_back(i);
    }
    for (auto& bucket : index) {
        std::stable_sort(bucket.begin(), bucket.end(),
                         [&](uint32_t a, uint32_t b) { return texts[a].size() > texts[b].size(); });
    }
    return index;
}

// The longest of `texts` starting at `pos`, or -1.
int64_t match_at(std::string_view s, size_t pos, const std::vector<std::string>& texts, const ByteIndex& index) {
    for (uint32_t i : index[static_cast<unsigned char>(s[pos])]) {
        if (s.substr(pos).starts_with(texts[i])) return i;
    }
    return -1;
}

std::string utc_date(std::time_t now, const char* format) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    const size_t n = std::strftime(buf, sizeof buf, format, &tm);
    return std::string(buf, n);
}

struct Span {
    size_t begin = 0, end = 0;
    int32_t message = -1;
};

// Whether `pos` falls strictly inside an escape sequence.
bool inside_escape(std::string_view text, size_t pos) {
    const size_t open = text.substr(0, pos).rfind(kEscapeOpen);
    if (open == std::string_view::npos) return false;
    const size_t close = text.find(kEscapeClose, open);
    return close == std::string_view::npos || pos < close + kEscapeClose.size();
}

// Each content's place in `text` (see the header): from the last message backwards; a place that
// would cut an escape sequence apart is passed over.
std::vector<Span> locate_contents(std::string_view text, const std::vector<std::string>& contents) {
    std::vector<Span> spans;
    size_t limit = text.size();
    for (size_t i = contents.size(); i-- > 0;) {
        for (const std::string& form : {contents[i], tmpl::python_strip(contents[i], nullptr, true, true)}) {
            if (form.empty() || form.size() > limit) continue;
            size_t at = text.substr(0, limit).rfind(form);
            while (at != std::string_view::npos && (inside_escape(text, at) || inside_escape(text, at + form.size())))
                at = at == 0 ? std::string_view::npos : text.substr(0, at + form.size() - 1).rfind(form);
            if (at == std::string_view::npos) continue;
            spans.push_back({at, at + form.size(), static_cast<int32_t>(i)});
            limit = at;
            break;
        }
    }
    std::reverse(spans.begin(), spans.end());
    return spans;
}

}  // namespace

ChatTemplateTokens chat_template_tokens_from_gguf(const loader::GgufFile& file) {
    ChatTemplateTokens t;
    auto tokens = file.get_string_array("tokenizer.ggml.tokens");
    if (!tokens.ok()) return t;
    auto types = file.get_int_array("tokenizer.ggml.token_type");
    if (types.ok() && types->size() == tokens->size()) {
        for (size_t i = 0; i < tokens->size(); ++i) {
            const auto type = static_cast<TokenType>((*types)[i]);
            if (type == TokenType::kControl) t.control_texts.push_back((*tokens)[i]);
            if (type == TokenType::kControl || type == TokenType::kUserDefined) t.special_texts.push_back((*tokens)[i]);
        }
    }
    auto text_of = [&](const char* key) {
        auto id = file.get_int(key);
        return id.ok() && *id >= 0 && static_cast<size_t>(*id) < tokens->size() ? (*tokens)[*id] : std::string();
    };
    t.bos_token = text_of("tokenizer.ggml.bos_token_id");
    t.eos_token = text_of("tokenizer.ggml.eos_token_id");
    return t;
}

Expected<std::shared_ptr<const JinjaChatTemplate>> JinjaChatTemplate::compile(std::string_view source,
                                                                              ChatTemplateTokens tokens,
                                                                              const tmpl::Value& kwargs) {
    auto parsed = tmpl::Template::parse(source);
    if (!parsed.ok()) return invalid_argument("chat template: " + parsed.status().message());
    auto t = std::make_shared<JinjaChatTemplate>();
    t->template_ = std::move(parsed).value();
    t->escaped_.push_back(std::string(kEscapeOpen));
    for (const std::string& c : tokens.control_texts) {
        if (!c.empty()) t->escaped_.push_back(c);
    }
    t->escape_by_byte_ = index_by_first_byte(t->escaped_);
    t->special_by_byte_ = index_by_first_byte(tokens.special_texts);
    t->tokens_ = std::move(tokens);
    auto probe = t->render({{"user", "Hello"}}, true, kwargs);
    if (!probe.ok())
        return invalid_argument("chat template cannot render a one-message chat: " + probe.status().message());
    return std::shared_ptr<const JinjaChatTemplate>(std::move(t));
}

std::string JinjaChatTemplate::escape_content(std::string_view content) const {
    std::string out;
    for (size_t pos = 0; pos < content.size();) {
        const int64_t k = match_at(content, pos, escaped_, escape_by_byte_);
        if (k < 0) {
            out.push_back(content[pos++]);
            continue;
        }
        out += kEscapeOpen;
        out += std::to_string(k);
        out += kEscapeClose;
        pos += escaped_[static_cast<size_t>(k)].size();
    }
    return out;
}

Expected<std::string> JinjaChatTemplate::unescape(std::string_view text) const {
    std::string out;
    for (size_t pos = 0; pos < text.size();) {
        const size_t open = text.find(kEscapeOpen, pos);
        if (open == std::string_view::npos) {
            out.append(text.substr(pos));
            break;
        }
        out.append(text.substr(pos, open - pos));
        const size_t digits = open + kEscapeOpen.size();
        const size_t close = text.find(kEscapeClose, digits);
        size_t k = 0;
        const bool well_formed =
            close != std::string_view::npos && close > digits && close - digits < 10 &&
            std::all_of(text.begin() + digits, text.begin() + close, [](char c) { return c >= '0' && c <= '9'; }) &&
            (k = std::stoul(std::string(text.substr(digits, close - digits)))) < escaped_.size();
        if (!well_formed)
            return invalid_argument(
                "the chat template cut apart a message's special-token text; it cannot be rendered safely");
        out += escaped_[k];
        pos = close + kEscapeClose.size();
    }
    return out;
}

// Template text: special-token texts become special pieces, escapes plain text.
void JinjaChatTemplate::add_markup(std::vector<ChatPiece>& out, std::string_view text) const {
    std::string plain;
    auto flush = [&] {
        if (!plain.empty()) out.push_back({std::move(plain), false, -1});
        plain.clear();
    };
    for (size_t pos = 0; pos < text.size();) {
        const int64_t k = text.substr(pos).starts_with(kEscapeOpen)
                              ? -1
                              : match_at(text, pos, tokens_.special_texts, special_by_byte_);
        if (k < 0) {
            plain.push_back(text[pos++]);
            continue;
        }
        flush();
        out.push_back({tokens_.special_texts[static_cast<size_t>(k)], true, -1});
        pos += tokens_.special_texts[static_cast<size_t>(k)].size();
    }
    flush();
}

tmpl::Value JinjaChatTemplate::escape_strings(const tmpl::Value& value) const {
    if (value.is_string()) return tmpl::Value(escape_content(value.as_string()));
    if (value.is_list()) {
        tmpl::ValueList items;
        for (const tmpl::Value& v : value.items()) items.push_back(escape_strings(v));
        return tmpl::Value::list(std::move(items));
    }
    if (value.is_dict()) {
        tmpl::Value d = tmpl::Value::dict();
        for (const auto& [k, v] : value.dict_items().entries())
            d.dict_items().set(escape_strings(k), escape_strings(v));
        return d;
    }
    return value;
}

// Messages as templates read them: role and content, and for tool use the OpenAI fields
// (tool_calls with arguments as a dict when they hold a JSON object, tool_call_id, name).
tmpl::Value JinjaChatTemplate::message_list(const std::vector<ChatMessage>& messages,
                                            const std::vector<std::string>& contents) const {
    tmpl::ValueList list;
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& msg = messages[i];
        tmpl::Value m = tmpl::Value::dict();
        m.dict_items().set("role", tmpl::Value(msg.role));
        m.dict_items().set("content", tmpl::Value(contents[i]));
        if (!msg.tool_calls.empty()) {
            tmpl::ValueList calls;
            for (const ChatToolCall& call : msg.tool_calls) {
                const nlohmann::json parsed = nlohmann::json::parse(call.arguments, nullptr, false);
                tmpl::Value arguments(escape_content(call.arguments));
                if (parsed.is_object()) {
                    auto v = template_value_from_json(parsed, "arguments");
                    if (v.ok()) arguments = escape_strings(*v);
                }
                tmpl::Value function = tmpl::Value::dict();
                function.dict_items().set("name", tmpl::Value(escape_content(call.name)));
                function.dict_items().set("arguments", arguments);
                tmpl::Value c = tmpl::Value::dict();
                c.dict_items().set("id", tmpl::Value(escape_content(call.id)));
                c.dict_items().set("type", tmpl::Value("function"));
                c.dict_items().set("function", function);
                calls.push_back(std::move(c));
            }
            m.dict_items().set("tool_calls", tmpl::Value::list(std::move(calls)));
        }
        if (!msg.tool_call_id.empty())
            m.dict_items().set("tool_call_id", tmpl::Value(escape_content(msg.tool_call_id)));
        if (!msg.name.empty()) m.dict_items().set("name", tmpl::Value(escape_content(msg.name)));
        list.push_back(std::move(m));
    }
    return tmpl::Value::list(std::move(list));
}

Expected<std::vector<ChatPiece>> JinjaChatTemplate::render(const std::vector<ChatMessage>& messages,
                                                           bool add_generation_prompt, const tmpl::Value& kwargs,
                                                           const tmpl::Value& tools) const {
    std::vector<std::string> contents;
    for (const ChatMessage& m : messages) contents.push_back(escape_content(m.content));
    tmpl::Value context = tmpl::Value::dict();
    tmpl::ValueDict& c = context.dict_items();
    // What llama-server passes every render, each overridden by kwargs: today's date in the two
    // spellings Llama 3.x and firefunction templates read (date_string, datetime), and
    // enable_thinking true (its default for a template that thinks: --reasoning auto).
    const std::time_t now = std::time(nullptr);
    c.set("date_string", tmpl::Value(utc_date(now, "%d %b %Y")));
    c.set("datetime", tmpl::Value(utc_date(now, "%b %d %Y")));
    c.set("enable_thinking", tmpl::Value(true));
    // Extra variables next, so that none can stand in for the renderer's own (the kwargs
    // parser refuses those names too).
    if (kwargs.is_dict()) {
        for (const auto& [name, value] : kwargs.dict_items().entries()) c.set(name, value);
    }
    c.set("messages", message_list(messages, contents));
    if (tools.is_list()) c.set("tools", escape_strings(tools));
    c.set("add_generation_prompt", tmpl::Value(add_generation_prompt));
    c.set("bos_token", tmpl::Value(tokens_.bos_token));
    c.set("eos_token", tmpl::Value(tokens_.eos_token));
    auto rendered = template_.render(context, {}, now);
    if (!rendered.ok()) return Status(rendered.status().code(), "chat template: " + rendered.status().message());
    const std::string& text = *rendered;

    std::vector<ChatPiece> pieces;
    size_t pos = 0;
    auto markup_until = [&](size_t end) -> Status {
        // Escapes in template text (content the template copied elsewhere) are plain text too.
        std::string_view rest = std::string_view(text).substr(pos, end - pos);
        while (!rest.empty()) {
            const size_t open = rest.find(kEscapeOpen);
            add_markup(pieces, rest.substr(0, open));
            if (open == std::string_view::npos) break;
            const size_t close = rest.find(kEscapeClose, open);
            const size_t stop = close == std::string_view::npos ? rest.size() : close + kEscapeClose.size();
            LA_ASSIGN_OR_RETURN(std::string plain, unescape(rest.substr(open, stop - open)));
            pieces.push_back({std::move(plain), false, -1});
            rest.remove_prefix(stop);
        }
        pos = end;
        return {};
    };
    for (const Span& span : locate_contents(text, contents)) {
        LA_RETURN_IF_ERROR(markup_until(span.begin));
        LA_ASSIGN_OR_RETURN(std::string content,
                            unescape(std::string_view(text).substr(span.begin, span.end - span.begin)));
        pieces.push_back({std::move(content), false, span.message});
        pos = span.end;
    }
    LA_RETURN_IF_ERROR(markup_until(text.size()));
    return pieces;
}

}  // namespace lazyattn::tokenizer
