#include "server/tool_calls/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include "server/http_util.h"  // json_nesting_depth, json_value_end
#include "server/tool_calls/builtin_tools.h"

namespace lazyattn::server::tool_calls {
namespace {

using json = nlohmann::json;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// ^[a-zA-Z0-9_-]$: what tool names and call ids are made of (valid_tool_name).
bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

size_t skip_space(std::string_view s, size_t pos = 0) {
    while (pos < s.size() && is_space(s[pos])) ++pos;
    return pos;
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
    // Mistral's templates refuse an earlier call whose id is not 9 letters and digits.
    const bool short_id = syntax_of(request_->format.family).short_ids;
    std::string id = short_id ? "" : "call_";
    for (int i = 0; i < (short_id ? 9 : 24); ++i) {
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
    std::optional<CallExtent> call;
    if (!open_.empty() && open_ == syn.open && syn.close[0] != '\0') {
        if (const size_t pos = buf_.find(syn.close); pos != std::string::npos) {
            call = CallExtent{pos + std::string_view(syn.close).size(), buf_.substr(0, pos)};
        }
    } else if (syn.named_args && open_ == syn.open) {
        call = named_args_extent(at_end);
    } else if (!open_.empty() && open_ == syn.alt_open) {
        call = python_tag_extent(at_end);
    } else {
        call = json_call_extent(at_end);
    }
    if (!call) {
        if (!at_end) return false;             // wait for the rest of the call
        call = CallExtent{buf_.size(), buf_};  // the reply ended inside the call
    }
    const std::string markup = open_ + buf_.substr(0, call->end);
    buf_.erase(0, call->end);
    end_call(out, call->body, markup);
    return true;
}

std::optional<ToolCallStream::CallExtent> ToolCallStream::json_call_extent(bool) const {
    const size_t begin = skip_space(buf_);
    if (begin == buf_.size()) return std::nullopt;
    if (buf_[begin] != '{' && buf_[begin] != '[') return CallExtent{};  // not JSON: the marker was text
    const size_t end = json_value_end(buf_, begin);
    if (end == std::string::npos) return std::nullopt;
    return CallExtent{end, buf_.substr(0, end)};
}

std::optional<ToolCallStream::CallExtent> ToolCallStream::named_args_extent(bool at_end) const {
    // A name and an id are at most 64 characters of ^[a-zA-Z0-9_-]$ (valid_tool_name), each
    // followed by a bracketed marker: anything else, and the marker was text.
    auto word_end = [&](size_t pos) {
        size_t end = pos;
        while (end < buf_.size() && end - pos <= 64 && is_name_char(buf_[end])) ++end;
        return end;
    };
    auto marker_at = [&](size_t pos, std::string_view marker) {  // 1: there, 0: maybe (cut), -1: no
        const std::string_view have = std::string_view(buf_).substr(pos, marker.size());
        if (have != marker.substr(0, have.size())) return -1;
        return have.size() == marker.size() ? 1 : 0;
    };
    // Spaces around the pieces are allowed: a SentencePiece vocabulary may put one after a marker.
    const std::optional<CallExtent> wait = at_end ? std::optional<CallExtent>(CallExtent{}) : std::nullopt;
    const size_t name_begin = skip_space(buf_);
    const size_t name_end = word_end(name_begin);
    if (name_end == buf_.size()) return wait;
    if (name_end == name_begin || name_end - name_begin > 64) return CallExtent{};
    size_t pos = skip_space(buf_, name_end);
    if (pos == buf_.size()) return wait;
    std::string id;
    if (const int has_id = marker_at(pos, "[CALL_ID]"); has_id >= 0) {
        if (has_id == 0) return wait;
        const size_t id_begin = skip_space(buf_, pos + 9);
        const size_t id_end = word_end(id_begin);
        if (id_end == buf_.size()) return wait;
        if (id_end == id_begin || id_end - id_begin > 64) return CallExtent{};
        id = buf_.substr(id_begin, id_end - id_begin);
        pos = skip_space(buf_, id_end);
        if (pos == buf_.size()) return wait;
    }
    const int has_args = marker_at(pos, "[ARGS]");
    if (has_args < 0) return CallExtent{};
    if (has_args == 0) return wait;
    const size_t begin = skip_space(buf_, pos + 6);
    if (begin == buf_.size()) return std::nullopt;
    if (buf_[begin] != '{') return CallExtent{};
    const size_t end = json_value_end(buf_, begin);
    if (end == std::string::npos) return std::nullopt;
    // The call as the JSON object the other families write: the name and id hold only
    // [a-zA-Z0-9_-], and the arguments are one balanced value, so nothing can break out of it.
    std::string body = "{\"name\": \"" + buf_.substr(name_begin, name_end - name_begin) +
                       "\", \"arguments\": " + buf_.substr(begin, end - begin);
    if (!id.empty()) body += ", \"id\": \"" + id + "\"";
    return CallExtent{end, body + "}"};
}

std::optional<ToolCallStream::CallExtent> ToolCallStream::python_tag_extent(bool at_end) const {
    const size_t begin = skip_space(buf_);
    if (begin < buf_.size() && (buf_[begin] == '{' || buf_[begin] == '[')) return json_call_extent(at_end);
    const BuiltinCallScan scan = scan_builtin_call(buf_);
    if (scan.state == BuiltinCallScan::kCall && request_->find(scan.name) != nullptr) {
        return CallExtent{scan.end, json{{"name", scan.name}, {"arguments", scan.arguments}}.dump()};
    }
    if (scan.state == BuiltinCallScan::kIncomplete && !at_end) return std::nullopt;
    // Raw code (a .call of a function not offered is code too): the rest of the reply calls
    // the code tool, when one is offered.
    const ToolDefinition* code = code_tool(*request_);
    if (code == nullptr) return CallExtent{};
    if (!at_end) return std::nullopt;
    std::string source = buf_.substr(begin);
    while (!source.empty() && is_space(source.back())) source.pop_back();
    if (source.empty()) return CallExtent{};
    return CallExtent{buf_.size(), json{{"name", code->name}, {"arguments", {{"code", source}}}}.dump()};
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
