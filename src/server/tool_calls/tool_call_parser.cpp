#include "server/tool_calls/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include "server/http_util.h"  // json_nesting_depth

namespace lazyattn::server::tool_calls {
namespace {

using json = nlohmann::json;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view s, size_t pos = 0) {
    while (pos < s.size() && is_space(s[pos])) ++pos;
    return pos;
}

// Where the JSON value starting at `begin` ends (one past its closing bracket), or npos while it
// is incomplete; `depth` gets the deepest nesting seen. Strings and escapes are followed, so a
// bracket inside a string does not count.
size_t json_value_end(std::string_view s, size_t begin, int& depth) {
    int level = 0;
    depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = begin; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            depth = std::max(depth, ++level);
        } else if (c == '}' || c == ']') {
            if (--level == 0) return i + 1;
            if (level < 0) return i + 1;  // unbalanced: ends here (and will not parse)
        }
    }
    return std::string_view::npos;
}

// The longest suffix of `s` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view s, std::string_view marker) {
    if (marker.empty()) return 0;
    for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n) {
        if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
    }
    return 0;
}

uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

bool valid_call_id(const std::string& id) { return valid_tool_name(id); }

// Arguments as JSON text of an object: an object, or a string holding one; absent: {}.
std::optional<std::string> arguments_of(const json& call) {
    const json* a = nullptr;
    if (call.contains("arguments")) {
        a = &call.at("arguments");
    } else if (call.contains("parameters")) {
        a = &call.at("parameters");
    }
    if (a == nullptr) return std::string("{}");
    if (a->is_object()) return a->dump(-1, ' ', false, json::error_handler_t::replace);
    if (a->is_string()) {
        const json inner = json::parse(a->get<std::string>(), nullptr, false);
        if (!inner.is_discarded() && inner.is_object())
            return inner.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    return std::nullopt;
}

}  // namespace

ToolCallStream::ToolCallStream(const ToolRequest& request, uint64_t id_seed) : request_(&request), seed_(id_seed) {}

std::string ToolCallStream::next_id() {
    static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    uint64_t x = splitmix(seed_ + ids_drawn_++);
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) {
        if (i % 10 == 0) x = splitmix(x);
        id += kAlphabet[x % 62];
        x /= 62;
    }
    return id;
}

ToolCallDelta ToolCallStream::feed(std::string_view text) {
    ToolCallDelta out;
    buf_.append(text);
    scan(out, false);
    return out;
}

ToolCallDelta ToolCallStream::finish() {
    ToolCallDelta out;
    scan(out, true);
    if (!buf_.empty()) emit_text(out, buf_);  // nothing left undecided at the end
    buf_.clear();
    return out;
}

void ToolCallStream::emit_text(ToolCallDelta& out, std::string_view text) {
    if (text.empty()) return;
    out.content.append(text);
    if (skip_space(text) < text.size()) at_start_ = false;
}

void ToolCallStream::scan(ToolCallDelta& out, bool at_end) {
    for (;;) {
        const bool progressed = in_call_ ? scan_call(out, at_end) : scan_text(out, at_end);
        if (!progressed) return;
    }
}

bool ToolCallStream::scan_text(ToolCallDelta& out, bool at_end) {
    const FamilySyntax& syn = syntax_of(request_->format.family);
    if (after_call_) {
        size_t skip = skip_space(buf_);
        // Llama 3.x writes several bare calls separated by ';'.
        while (syn.family == ToolFamily::kLlama3 && skip < buf_.size() && buf_[skip] == ';') {
            skip = skip_space(buf_, skip + 1);
        }
        buf_.erase(0, skip);
        if (buf_.empty()) return false;
        after_call_ = false;
    }
    const size_t first = skip_space(buf_);
    // A bare JSON call: Llama 3.x's only, and only where the reply (or the text since its last
    // call) has said nothing yet.
    if (syn.family == ToolFamily::kLlama3 && at_start_ && first < buf_.size() && buf_[first] == '{') {
        gap_ = buf_.substr(0, first);
        buf_.erase(0, first);
        open_.clear();
        in_call_ = true;
        return true;
    }
    size_t at = std::string::npos;
    std::string_view marker;
    for (std::string_view m : {std::string_view(syn.open), std::string_view(syn.alt_open)}) {
        if (m.empty()) continue;
        const size_t pos = buf_.find(m);
        if (pos < at) {
            at = pos;
            marker = m;
        }
    }
    if (at != std::string::npos) {
        size_t text_end = at;
        while (text_end > 0 && is_space(buf_[text_end - 1])) --text_end;
        emit_text(out, std::string_view(buf_).substr(0, text_end));
        gap_ = buf_.substr(text_end, at - text_end);
        open_ = std::string(marker);
        buf_.erase(0, at + marker.size());
        in_call_ = true;
        return true;
    }
    if (at_end) return false;  // finish() sends the rest
    // Hold back a possible marker's start and the whitespace before it (a call may follow), and
    // for llama3 whitespace before a reply's first word.
    size_t keep = std::max(partial_marker(buf_, syn.open), partial_marker(buf_, syn.alt_open));
    size_t send = buf_.size() - keep;
    while (send > 0 && is_space(buf_[send - 1])) --send;
    emit_text(out, std::string_view(buf_).substr(0, send));
    buf_.erase(0, send);
    return false;
}

bool ToolCallStream::scan_call(ToolCallDelta& out, bool at_end) {
    const FamilySyntax& syn = syntax_of(request_->format.family);
    const bool closes = !open_.empty() && open_ == syn.open && syn.close[0] != '\0';
    size_t body_end = std::string::npos, markup_end = std::string::npos;
    if (closes) {
        const size_t pos = buf_.find(syn.close);
        if (pos != std::string::npos) {
            body_end = pos;
            markup_end = pos + std::string_view(syn.close).size();
        }
    } else {
        const size_t begin = skip_space(buf_);
        if (begin < buf_.size() && buf_[begin] != '{' && buf_[begin] != '[') {
            body_end = markup_end = 0;  // not JSON after the marker: the marker was text
        } else if (begin < buf_.size()) {
            int depth = 0;
            const size_t end = json_value_end(buf_, begin, depth);
            if (end != std::string::npos) body_end = markup_end = end;
        }
    }
    if (body_end == std::string::npos) {
        if (!at_end) return false;            // wait for the rest of the call
        body_end = markup_end = buf_.size();  // the reply ended inside the call
    }
    const std::string body = buf_.substr(0, body_end);
    const std::string markup = open_ + buf_.substr(0, markup_end);
    buf_.erase(0, markup_end);
    end_call(out, body, markup);
    return true;
}

void ToolCallStream::end_call(ToolCallDelta& out, std::string_view body, std::string_view markup) {
    in_call_ = false;
    std::vector<ToolCall> calls;
    bool valid = json_nesting_depth(body, kMaxCallDepth) <= kMaxCallDepth;
    json v;
    if (valid) {
        v = json::parse(body, nullptr, false);
        valid = !v.is_discarded() && (v.is_object() || v.is_array());
    }
    if (valid) {
        const json items = v.is_array() ? v : json::array({v});
        for (const json& item : items) {
            if (!item.is_object() || !item.contains("name") || !item.at("name").is_string()) {
                valid = false;
                break;
            }
            const std::string name = item.at("name").get<std::string>();
            auto arguments = arguments_of(item);
            if (request_->find(name) == nullptr || !arguments) {
                valid = false;
                break;
            }
            ToolCall call;
            call.name = name;
            call.arguments = std::move(*arguments);
            const bool own_id =
                item.contains("id") && item.at("id").is_string() && valid_call_id(item.at("id").get<std::string>());
            call.id = own_id ? item.at("id").get<std::string>() : next_id();
            calls.push_back(std::move(call));
        }
    }
    // parallel_tool_calls false: one call in all; a second is text.
    if (valid && !request_->parallel && num_calls_ + calls.size() > 1) valid = false;
    if (!valid) {
        const std::string text = gap_ + std::string(markup);
        gap_.clear();
        emit_text(out, text);
        return;
    }
    gap_.clear();
    num_calls_ += calls.size();
    for (ToolCall& c : calls) out.calls.push_back(std::move(c));
    after_call_ = true;
}

ParsedReply parse_tool_calls(std::string_view text, const ToolRequest& request, uint64_t id_seed) {
    ToolCallStream stream(request, id_seed);
    ToolCallDelta all = stream.feed(text);
    ToolCallDelta rest = stream.finish();
    all.content += rest.content;
    for (ToolCall& c : rest.calls) all.calls.push_back(std::move(c));
    ParsedReply r;
    if (!all.content.empty() || all.calls.empty()) r.content = std::move(all.content);
    r.calls = std::move(all.calls);
    return r;
}

json openai_tool_calls(const std::vector<ToolCall>& calls) {
    json list = json::array();
    for (const ToolCall& c : calls) {
        list.push_back(
            {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    return list;
}

std::vector<json> openai_tool_call_deltas(const ToolCall& call, int index) {
    return {{{"index", index},
             {"id", call.id},
             {"type", "function"},
             {"function", {{"name", call.name}, {"arguments", ""}}}},
            {{"index", index}, {"function", {{"arguments", call.arguments}}}}};
}

}  // namespace lazyattn::server::tool_calls
