// Reasoning split: a thinking model's reply, "<think>...</think>answer", as OpenAI-style clients
// read it from llama-server: the thoughts in message.reasoning_content (delta.reasoning_content
// when streamed), the answer in message.content. Pure text in, text out.
//
// llama-server's formats (--reasoning-format, a request's `reasoning_format`):
//   none             nothing is parsed: the whole text is the content;
//   deepseek, auto   the thoughts go to reasoning_content, the answer to content (auto is
//                    llama-server's default, and the same here: <think> is the one tag known);
//   deepseek-legacy  reasoning_content as deepseek, while content keeps the whole text, tags
//                    included.
// A reply opens its thoughts with "<think>" (after any whitespace), or the prompt already did
// (a template whose generation prompt ends with "<think>": started_in_reasoning). Thoughts that
// never close (max_tokens reached) are reasoning all the same. Whitespace around the thoughts and
// before the answer is dropped, as llama-server drops it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lazyattn::server {

enum class ReasoningFormat { kNone, kAuto, kDeepseek, kDeepseekLegacy };

// "none", "auto", "deepseek", "deepseek-legacy"; nullopt for anything else.
std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name);
const char* reasoning_format_name(ReasoningFormat format);
// The names, for messages: "none, auto, deepseek, deepseek-legacy".
const char* reasoning_format_names();

// Whether a rendered prompt leaves the model inside its thoughts (it ends with "<think>" and
// whitespace).
bool prompt_opens_reasoning(std::string_view prompt);

struct ReasoningParts {
    std::string reasoning;       // "" when the reply has no thoughts
    std::string content;         // the answer (deepseek-legacy: the whole text)
    bool has_reasoning = false;  // the reply had a thoughts section (even an empty one)
};

ReasoningParts split_reasoning(std::string_view text, ReasoningFormat format, bool started_in_reasoning = false);

// The same split over a streamed reply, piece by piece. Each feed() answers what can be sent
// now; text that may still turn out to be part of a tag (a suffix of "<think>" or "</think>"
// that is a prefix of it) or whitespace that may be dropped is held until the next feed() or
// finish(). The concatenated deltas equal split_reasoning() of the whole text, wherever the text
// is cut.
class ReasoningStream {
public:
    explicit ReasoningStream(ReasoningFormat format, bool started_in_reasoning = false);

    struct Delta {
        std::string reasoning;
        std::string content;
        bool empty() const { return reasoning.empty() && content.empty(); }
    };
    Delta feed(std::string_view text);
    // The end of the reply: what was held back, as split_reasoning() would place it.
    Delta finish();

private:
    enum class State { kStart, kReasoning, kContentStart, kContent };
    void run(Delta& out, bool final);

    ReasoningFormat format_;
    State state_;
    std::string pending_;             // received, not yet placed
    std::string held_ws_;             // whitespace inside the thoughts, sent only if more thoughts follow
    bool reasoning_started_ = false;  // some thought text was sent (leading whitespace is dropped)
};

}  // namespace lazyattn::server
