// Documents inside chat messages: RAG frameworks (LangChain, LlamaIndex, Haystack) put the
// retrieved passages into a message, either as its text parts or joined by a separator, instead of
// lazyattn's `documents` field. This finds them there so that they become cached segments in
// place, each laid out exactly as a `documents` entry (engine::format_document), so a passage is
// the same segment whichever way it arrives.
//
// Two sources (docs/api.md, "Documents inside messages"):
//   parts      the chosen message's content is a list of text parts: every part but the last is a
//              document; the last stays text after them (the question, in the last user message).
//   delimiter  the chosen message's text is cut at every delimiter match into c0..cn: c0 is the
//              first document unless it is a heading (blank, ending with ':', or one line of at
//              most 80 bytes), which stays text before the documents with the first match;
//              c1..c(n-1) are documents, and cn is a document too unless the message is the last
//              user message, where cn (with the match before it) is the question. Empty chunks
//              are skipped.
// The message: auto (the last user message where it yields a document, else the first system
// message), last_user, system (the first), or an index into messages.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace lazyattn::server {

// What matching delimiters may spend on one request. PCRE2's own match limit bounds one attempt
// and restarts at every start position, so a catastrophic pattern over a long message costs
// limit x positions (minutes); this is one count of PCRE2 steps (auto-callouts: one per pattern
// item visited) shared by every attempt, position and message of the request, plus a check that
// the client is still there.
struct MatchBudget {
    // ~30-60 ms of matching on one core: a legitimate pattern over the largest accepted message
    // needs a few steps per candidate position, far less.
    static constexpr uint64_t kDefaultSteps = 8'000'000;
    // How often (in steps) `cancelled` is polled.
    static constexpr uint64_t kPollSteps = 1 << 16;
    uint64_t steps_left = kDefaultSteps;
    std::function<bool()> cancelled;  // true once the client left (may be empty)
};

// A literal string or a PCRE2 pattern ("regex:..."), compiled once. Matching is bounded by the
// request's MatchBudget: a pattern that backtracks catastrophically fails (kInvalidArgument)
// within the budget instead of spinning, and a departed client stops it (kCancelled).
class Delimiter {
public:
    // Longest pattern or literal accepted.
    static constexpr size_t kMaxBytes = 1024;
    // kInvalidArgument: empty, too long, not compilable, or matching the empty string.
    static Expected<std::shared_ptr<const Delimiter>> compile(const std::string& spec);
    ~Delimiter();
    Delimiter(const Delimiter&) = delete;
    Delimiter& operator=(const Delimiter&) = delete;

    // [begin, end) of every non-overlapping match in text, left to right; the steps spent are
    // taken from `budget`.
    Expected<std::vector<std::pair<size_t, size_t>>> find_all(const std::string& text, MatchBudget& budget) const;
    const std::string& spec() const { return spec_; }

private:
    Delimiter() = default;
    std::string spec_;
    std::string literal_;   // when not a pattern
    void* code_ = nullptr;  // pcre2_code_8*
};

// "\n", "\t", "\r", "\\" in a command-line value, for literal delimiters typed in a shell.
Expected<std::string> unescape_delimiter(const std::string& value);
// A delimiter as typed on the command line: a "regex:" pattern as it is (PCRE2 reads its own
// escapes), a literal unescaped first.
Expected<std::shared_ptr<const Delimiter>> compile_command_line_delimiter(const std::string& value);

// The most documents one request may carry unless --max-documents says otherwise.
inline constexpr int32_t kDefaultMaxDocuments = 256;

enum class DocumentsSource { kNone, kParts, kDelimiter };

struct DocumentsFrom {
    DocumentsSource source = DocumentsSource::kNone;
    // kAuto, kLastUser, kSystem, or kIndex with `index` (into messages).
    enum class Message { kAuto, kLastUser, kSystem, kIndex } message = Message::kAuto;
    int32_t index = -1;
    std::shared_ptr<const Delimiter> delimiter;  // set for kDelimiter
    // Also find the tenant's known documents in the message (server/known_documents.h); with a
    // source, in the text that source leaves around its documents.
    bool known = false;

    bool enabled() const { return source != DocumentsSource::kNone || known; }
    std::string describe() const;
};

// "none", "parts", "delimiter".
Expected<DocumentsSource> parse_documents_source(const std::string& name);
// A documents_from name: a source, "known", or a source and "known" joined by '+'
// ("delimiter+known"); "none" also turns "known" off.
Expected<std::pair<DocumentsSource, bool>> parse_documents_from_name(const std::string& name);
// "auto", "last_user", "system" or a non-negative index.
Expected<std::pair<DocumentsFrom::Message, int32_t>> parse_documents_message(const std::string& name);

// One text part of a message's content (`id` names a registered document when text is empty).
struct ContentPart {
    std::string text;
    std::string id;
};

// How a message's text parts join into its text: llama-server's rule, written once. A newline
// between parts (what llama-server gives a template that takes string content, in every role);
// a blank line inside the assistant message the answer continues (its prefill, which it renders
// itself after the template). A separator goes before a part whenever text precedes it.
enum class PartsJoin { kMessage, kContinued };
void append_text_part(std::string& text, const std::string& part, PartsJoin join = PartsJoin::kMessage);
std::string join_text_parts(const std::vector<ContentPart>& parts, PartsJoin join);

// A document found in a message: its text, or the id of a registered document. `raw`: text
// between known documents, a segment of its own tokenized as it is (not format_document's).
struct MessageDocument {
    std::string text;
    std::string id;
    bool raw = false;
};

// Where a message's documents are: the message's rendered content is `before`, the documents,
// then `after`.
struct MessageDocuments {
    int32_t message = -1;
    std::string before;
    std::vector<MessageDocument> documents;
    std::string after;
};

// `content` is each message's content as the chat template rendered it (what the model would
// read), `parts` each message's text parts (empty for a string content), `roles` the roles. The
// result has no documents when the source finds none (the prompt is then laid out as usual).
// kInvalidArgument: more than max_documents documents (naming the limit), or a chosen index out
// of range, or a pattern too expensive on the text (past `budget`); kCancelled: the client left.
Expected<MessageDocuments> find_message_documents(const DocumentsFrom& from, const std::vector<std::string>& roles,
                                                  const std::vector<std::string>& content,
                                                  const std::vector<std::vector<ContentPart>>& parts,
                                                  int32_t max_documents, MatchBudget& budget);

}  // namespace lazyattn::server
