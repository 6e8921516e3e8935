#include "server/reasoning_split.h"

#include <algorithm>

namespace lazyattn::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view lstrip(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    return s;
}

std::string_view rstrip(std::string_view s) {
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// The length of the longest proper prefix of `tag` that `s` ends with.
size_t partial_tag_at_end(std::string_view s, std::string_view tag) {
    for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
        if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
    }
    return 0;
}

}  // namespace

std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name) {
    if (name == "none") return ReasoningFormat::kNone;
    if (name == "auto") return ReasoningFormat::kAuto;
    if (name == "deepseek") return ReasoningFormat::kDeepseek;
    if (name == "deepseek-legacy") return ReasoningFormat::kDeepseekLegacy;
    return std::nullopt;
}

const char* reasoning_format_name(ReasoningFormat format) {
    switch (format) {
        case ReasoningFormat::kNone:
            return "none";
        case ReasoningFormat::kAuto:
            return "auto";
        case ReasoningFormat::kDeepseek:
            return "deepseek";
        case ReasoningFormat::kDeepseekLegacy:
            return "deepseek-legacy";
    }
    return "none";
}

const char* reasoning_format_names() { return "none, auto, deepseek, deepseek-legacy"; }

bool prompt_opens_reasoning(std::string_view prompt) { return rstrip(prompt).ends_with(kOpen); }

ReasoningParts split_reasoning(std::string_view text, ReasoningFormat format, bool started_in_reasoning) {
    ReasoningParts parts;
    if (format == ReasoningFormat::kNone) {
        parts.content = std::string(text);
        return parts;
    }
    std::string_view thoughts = text;
    if (!started_in_reasoning) {
        const std::string_view after_space = lstrip(text);
        if (!after_space.starts_with(kOpen)) {
            parts.content = std::string(text);
            return parts;
        }
        thoughts = after_space.substr(kOpen.size());
    }
    parts.has_reasoning = true;
    const size_t close = thoughts.find(kClose);
    parts.reasoning = std::string(rstrip(lstrip(thoughts.substr(0, close))));
    if (close != std::string_view::npos) parts.content = std::string(lstrip(thoughts.substr(close + kClose.size())));
    if (format == ReasoningFormat::kDeepseekLegacy) parts.content = std::string(text);
    return parts;
}

ReasoningStream::ReasoningStream(ReasoningFormat format, bool started_in_reasoning)
    : format_(format), state_(started_in_reasoning ? State::kReasoning : State::kStart) {}

ReasoningStream::Delta ReasoningStream::feed(std::string_view text) {
    Delta out;
    if (format_ == ReasoningFormat::kNone) {
        out.content = std::string(text);
        return out;
    }
    pending_ += text;
    run(out, false);
    if (format_ == ReasoningFormat::kDeepseekLegacy) out.content = std::string(text);  // the whole text, as sent
    return out;
}

ReasoningStream::Delta ReasoningStream::finish() {
    Delta out;
    if (format_ == ReasoningFormat::kNone) return out;
    run(out, true);
    if (format_ == ReasoningFormat::kDeepseekLegacy) out.content.clear();  // already sent by feed()
    pending_.clear();
    return out;
}

void ReasoningStream::run(Delta& out, bool final) {
    // Thought text: leading whitespace dropped, trailing whitespace held until more thought
    // follows (dropped when the thoughts close).
    auto think = [&](std::string_view t, bool closing) {
        if (!reasoning_started_) t = lstrip(t);
        const std::string_view body = rstrip(t);
        if (!body.empty()) {
            out.reasoning += held_ws_;
            out.reasoning += body;
            held_ws_.clear();
            reasoning_started_ = true;
        }
        held_ws_ += t.substr(body.size());
        if (closing) held_ws_.clear();
    };
    for (;;) {
        switch (state_) {
            case State::kStart: {
                const std::string_view rest = lstrip(pending_);
                if (rest.starts_with(kOpen)) {
                    pending_ = std::string(rest.substr(kOpen.size()));
                    state_ = State::kReasoning;
                    continue;
                }
                if (!final && kOpen.starts_with(rest)) return;  // may still become "<think>"
                state_ = State::kContent;
                continue;
            }
            case State::kReasoning: {
                const size_t close = pending_.find(kClose);
                if (close != std::string::npos) {
                    think(std::string_view(pending_).substr(0, close), true);
                    pending_.erase(0, close + kClose.size());
                    state_ = State::kContentStart;
                    continue;
                }
                const size_t keep = final ? 0 : partial_tag_at_end(pending_, kClose);
                think(std::string_view(pending_).substr(0, pending_.size() - keep), final);
                pending_.erase(0, pending_.size() - keep);
                return;
            }
            case State::kContentStart: {
                pending_ = std::string(lstrip(pending_));
                if (pending_.empty()) return;
                state_ = State::kContent;
                continue;
            }
            case State::kContent:
                out.content += pending_;
                pending_.clear();
                return;
        }
    }
}

}  // namespace lazyattn::server
