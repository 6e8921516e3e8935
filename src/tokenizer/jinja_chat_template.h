// A model's own Jinja chat template (tokenizer.chat_template, or a .jinja file), rendered by
// lazyattn's Jinja engine (src/template) and cut into ChatPieces.
//
// The rule that keeps a client from forging special tokens: before rendering, every control
// token's text in a message's content (and the escape character itself) is replaced by an escape
// sequence of private-use characters (U+E000 index U+E001); after rendering, escapes become plain
// text again (never special), and only the template's own text is searched for special tokens.
// Control tokens are the ones tokenization without special parsing leaves as text; user-defined
// tokens are matched in any text anyway, so they are not escaped and a template that inspects
// content for them (e.g. '</think>') sees it unchanged. A template sees escapes only where a client
// sent control-token text, so for every other conversation the rendered text is exactly jinja2's.
//
// The rule that tells the RAG layout where the question is: each message's content is located in
// the rendered text as it was given or, failing that, as str.strip() leaves it (templates that
// trim), searching from the last message backwards, each before the previous one found. Pieces
// inside a located span carry the message index.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "template/template.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::tokenizer {

struct ChatMessage;
struct ChatPiece;

// The token texts a chat template needs from the model's vocabulary.
struct ChatTemplateTokens {
    std::string bos_token;                   // passed to the template as bos_token ("" if none)
    std::string eos_token;                   // ... as eos_token
    std::vector<std::string> control_texts;  // escaped in message contents
    std::vector<std::string> special_texts;  // control and user-defined: special pieces in markup
};

// From the GGUF's tokenizer.ggml.tokens / token_type / bos_token_id / eos_token_id; empty when
// the file has no vocabulary.
ChatTemplateTokens chat_template_tokens_from_gguf(const loader::GgufFile& file);

class JinjaChatTemplate {
public:
    // Parses `source` and renders a probe conversation (one user message, with the generation
    // prompt, and `kwargs`) exactly as a request without tools renders, so that a template that
    // cannot serve is refused when the model loads.
    static Expected<std::shared_ptr<const JinjaChatTemplate>> compile(std::string_view source,
                                                                      ChatTemplateTokens tokens,
                                                                      const tmpl::Value& kwargs = {});

    // kInvalidArgument when the template raises (e.g. "System role not supported"), names a
    // construct the engine lacks, or reaches a render limit. `kwargs` (a dict, or undefined) are
    // extra variables. `tools` and `documents` are left undefined, as llama-server renders a
    // request that has none (tool-use templates iterate `tools` unguarded; None would raise);
    // date_string, datetime (today, UTC) and enable_thinking (true) are set as llama-server
    // sets them, unless kwargs say otherwise.
    // `tools` (a list, or undefined: none) is the template's `tools` variable; its strings, and a
    // tool call's arguments, are escaped as contents are (a tool's description cannot forge a
    // special token either).
    Expected<std::vector<ChatPiece>> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                            const tmpl::Value& kwargs = {}, const tmpl::Value& tools = {}) const;
    const ChatTemplateTokens& tokens() const { return tokens_; }

private:
    std::string escape_content(std::string_view content) const;
    tmpl::Value escape_strings(const tmpl::Value& value) const;  // every string and key, escaped
    tmpl::Value message_list(const std::vector<ChatMessage>& messages, const std::vector<std::string>& contents) const;
    Expected<std::string> unescape(std::string_view text) const;
    void add_markup(std::vector<ChatPiece>& out, std::string_view text) const;

    tmpl::Template template_;
    ChatTemplateTokens tokens_;
    std::vector<std::string> escaped_;  // escape index -> original text; 0 is the escape character
    // Indices into escaped_ / tokens_.special_texts by first byte, longest text first.
    std::array<std::vector<uint32_t>, 256> escape_by_byte_;
    std::array<std::vector<uint32_t>, 256> special_by_byte_;
};

}  // namespace lazyattn::tokenizer
