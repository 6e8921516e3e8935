#include "server/message_documents.h"

#include "core/utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>

namespace lazyattn::server {
namespace {

const std::string kRegexPrefix = "regex:";

bool is_pattern(const std::string& spec) { return spec.compare(0, kRegexPrefix.size(), kRegexPrefix) == 0; }

// Bounds on one match attempt of a client's pattern (PCRE2's interpreter, no JIT, so that every
// limit and callout applies): backtracking steps, nesting depth and heap. The request's
// MatchBudget bounds the sum over attempts (count_step below).
constexpr uint32_t kMatchLimit = 200000;
constexpr uint32_t kDepthLimit = 2000;
constexpr uint32_t kHeapLimitKiB = 4096;

struct MatchResources {
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    MatchResources() {
        pcre2_set_match_limit(context, kMatchLimit);
        pcre2_set_depth_limit(context, kDepthLimit);
        pcre2_set_heap_limit(context, kHeapLimitKiB);
    }
    ~MatchResources() { pcre2_match_context_free(context); }
};

// What one find_all() is spending: the request's budget, and why it stopped.
struct StepCounter {
    MatchBudget* budget;
    uint64_t until_poll = MatchBudget::kPollSteps;
    bool exhausted = false;
    bool cancelled = false;
};

// PCRE2's auto-callout, before every pattern item: one step of the budget. A non-zero negative
// return aborts the match with that code.
int count_step(pcre2_callout_block*, void* data) {
    auto* c = static_cast<StepCounter*>(data);
    if (c->budget->steps_left == 0) {
        c->exhausted = true;
        return PCRE2_ERROR_CALLOUT;
    }
    --c->budget->steps_left;
    if (--c->until_poll == 0) {
        c->until_poll = MatchBudget::kPollSteps;
        if (c->budget->cancelled && c->budget->cancelled()) {
            c->cancelled = true;
            return PCRE2_ERROR_CALLOUT;
        }
    }
    return 0;
}

// This thread's match context, counting into `counter`.
pcre2_match_context* match_context(StepCounter* counter) {
    thread_local MatchResources r;
    pcre2_set_callout(r.context, count_step, counter);
    return r.context;
}

// Why a match stopped with PCRE2 error `rc`.
Status failed_match(int rc, const StepCounter& counter) {
    if (counter.cancelled)
        return Status(StatusCode::kCancelled, "the client disconnected while delimiters were matched");
    if (counter.exhausted || rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT) {
        // Appended, not a chain of operator+ (GCC 12 warns falsely on that shape).
        std::string m = "the document delimiter pattern is too expensive on this text (over the ";
        m += std::to_string(MatchBudget::kDefaultSteps);
        m += " matching steps one request may spend, or PCRE2's per-attempt limits)";
        return invalid_argument(std::move(m));
    }
    return invalid_argument("the document delimiter pattern failed (PCRE2 error " + std::to_string(rc) + ")");
}

bool blank(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

std::string rtrim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
}

int32_t first_role(const std::vector<std::string>& roles, const char* role) {
    for (size_t i = 0; i < roles.size(); ++i) {
        if (roles[i] == role) return int32_t(i);
    }
    return -1;
}

int32_t last_role(const std::vector<std::string>& roles, const char* role) {
    for (size_t i = roles.size(); i-- > 0;) {
        if (roles[i] == role) return int32_t(i);
    }
    return -1;
}

Status too_many(int32_t message, size_t found, int32_t max_documents) {
    return invalid_argument("messages[" + std::to_string(message) + "] holds " + std::to_string(found) +
                            " documents; at most " + std::to_string(max_documents) + " per request (--max-documents)");
}

// Parts: every part but the last is a document; the last is text after them.
Expected<MessageDocuments> from_parts(int32_t m, const std::string& content, const std::vector<ContentPart>& parts,
                                      int32_t max_documents) {
    MessageDocuments out;
    if (parts.size() < 2) return out;
    if (parts.back().text.empty() && !parts.back().id.empty()) {
        return invalid_argument("the last part of messages[" + std::to_string(m) +
                                "] is the text after its documents; it cannot name a document by id");
    }
    out.message = m;
    const std::string joined = join_text_parts(parts, PartsJoin::kMessage);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
        if (parts[i].id.empty() && blank(parts[i].text)) continue;  // empty parts are skipped
        out.documents.push_back({parts[i].text, parts[i].text.empty() ? parts[i].id : std::string()});
    }
    // The template writes the content as given, or trimmed (Llama-3): the question then loses
    // its trailing whitespace as it would have.
    out.after = content.size() < joined.size() ? rtrim(parts.back().text) : parts.back().text;
    if (int32_t(out.documents.size()) > max_documents) return too_many(m, out.documents.size(), max_documents);
    return out;
}

// A chunk 0 that is text before the documents rather than the first of them: a heading or an
// instruction, i.e. blank, ending with a colon ("Context:"), or one short line ("Context
// information is below."). A retrieved passage is longer than a line of kMaxHeadingBytes.
constexpr size_t kMaxHeadingBytes = 80;

bool is_heading(const std::string& c0) {
    const std::string t = rtrim(c0);
    if (t.empty() || t.back() == ':') return true;
    return t.size() <= kMaxHeadingBytes && t.find('\n') == std::string::npos;
}

// Delimiter: chunks c0..cn between matches; see the header for which are documents.
Expected<MessageDocuments> from_delimiter(int32_t m, bool question_message, const std::string& text,
                                          const Delimiter& delimiter, int32_t max_documents, MatchBudget& budget) {
    MessageDocuments out;
    LA_ASSIGN_OR_RETURN(auto matches, delimiter.find_all(text, budget));
    if (matches.empty()) return out;
    const size_t n = matches.size();
    auto chunk = [&](size_t i) {  // c_i
        const size_t b = i == 0 ? 0 : matches[i - 1].second;
        const size_t e = i == n ? text.size() : matches[i].first;
        return text.substr(b, e - b);
    };
    out.message = m;
    const std::string c0 = chunk(0);
    const bool c0_document = !is_heading(c0);
    if (!c0_document) out.before = text.substr(0, matches[0].second);
    const size_t last_doc = question_message ? n - 1 : n;
    for (size_t i = c0_document ? 0 : 1; i <= last_doc; ++i) {
        std::string c = chunk(i);
        if (!blank(c)) out.documents.push_back({std::move(c), ""});
    }
    if (int32_t(out.documents.size()) > max_documents) return too_many(m, out.documents.size(), max_documents);
    if (question_message) out.after = text.substr(matches[n - 1].first);
    return out;
}

Status unknown_escape(char c) {
    const std::string escape = std::string("\\") + c;
    return invalid_argument("unknown escape " + escape +
                            " in the document delimiter (\\n \\t \\r \\\\ are understood)");
}

}  // namespace

void append_text_part(std::string& text, const std::string& part, PartsJoin join) {
    if (!text.empty()) text += join == PartsJoin::kContinued ? "\n\n" : "\n";
    text += part;
}

std::string join_text_parts(const std::vector<ContentPart>& parts, PartsJoin join) {
    std::string text;
    for (const ContentPart& p : parts) append_text_part(text, p.text, join);
    return text;
}

Expected<std::shared_ptr<const Delimiter>> Delimiter::compile(const std::string& spec) {
    std::shared_ptr<Delimiter> d(new Delimiter());
    d->spec_ = spec;
    const bool pattern = is_pattern(spec);
    const std::string body = pattern ? spec.substr(kRegexPrefix.size()) : spec;
    if (body.empty()) return invalid_argument("the document delimiter is empty");
    if (body.size() > kMaxBytes) {
        return invalid_argument("the document delimiter is longer than " + std::to_string(kMaxBytes) + " bytes");
    }
    if (!pattern) {
        d->literal_ = body;
        return std::shared_ptr<const Delimiter>(std::move(d));
    }
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(body.data()), body.size(),
                      PCRE2_UTF | PCRE2_NEVER_BACKSLASH_C | PCRE2_AUTO_CALLOUT, &error, &offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        return invalid_argument("the document delimiter pattern does not compile at offset " + std::to_string(offset) +
                                ": " + reinterpret_cast<const char*>(message));
    }
    d->code_ = code;
    // A pattern that can match nothing would cut everywhere.
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    MatchBudget budget;
    StepCounter counter{&budget};
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(""), 0, 0, 0, md, match_context(&counter));
    pcre2_match_data_free(md);
    if (rc >= 0) return invalid_argument("the document delimiter pattern matches the empty string");
    if (rc != PCRE2_ERROR_NOMATCH) {
        return invalid_argument("the document delimiter pattern is too expensive even on the empty string");
    }
    return std::shared_ptr<const Delimiter>(std::move(d));
}

Delimiter::~Delimiter() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Expected<std::vector<std::pair<size_t, size_t>>> Delimiter::find_all(const std::string& text,
                                                                     MatchBudget& budget) const {
    std::vector<std::pair<size_t, size_t>> out;
    if (code_ == nullptr) {
        for (size_t at = text.find(literal_); at != std::string::npos; at = text.find(literal_, at + literal_.size())) {
            out.emplace_back(at, at + literal_.size());
        }
        return out;
    }
    auto* code = static_cast<pcre2_code*>(code_);
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    StepCounter counter{&budget};
    pcre2_match_context* context = match_context(&counter);
    Status status;
    for (size_t from = 0; from <= text.size();) {
        // The text is valid UTF-8 (checked when the request was parsed).
        const int rc = pcre2_match(code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, md, context);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            status = failed_match(rc, counter);
            break;
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        if (ov[1] <= ov[0]) {  // a lookaround-only match: empty here although not on ""
            status = invalid_argument("the document delimiter pattern matched an empty string");
            break;
        }
        out.emplace_back(size_t(ov[0]), size_t(ov[1]));
        from = ov[1];
    }
    pcre2_match_data_free(md);
    if (!status.ok()) return status;
    return out;
}

Expected<std::string> unescape_delimiter(const std::string& value) {
    std::string out;
    for (size_t i = 0; i < value.size(); ++i) {
        if (value[i] != '\\' || i + 1 == value.size()) {
            out += value[i];
            continue;
        }
        const char c = value[++i];
        switch (c) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case '\\':
                out += '\\';
                break;
            default:
                return unknown_escape(c);
        }
    }
    return out;
}

Expected<std::shared_ptr<const Delimiter>> compile_command_line_delimiter(const std::string& value) {
    if (is_pattern(value)) return Delimiter::compile(value);
    LA_ASSIGN_OR_RETURN(const std::string literal, unescape_delimiter(value));
    return Delimiter::compile(literal);
}

std::string DocumentsFrom::describe() const {
    if (!enabled()) return "none";
    std::string s = source == DocumentsSource::kNone    ? "known"
                    : source == DocumentsSource::kParts ? "parts"
                                                        : "delimiter " + delimiter->spec();
    if (known && source != DocumentsSource::kNone) s += " + known";
    switch (message) {
        case Message::kAuto:
            return s + " (message auto)";
        case Message::kLastUser:
            return s + " (message last_user)";
        case Message::kSystem:
            return s + " (message system)";
        case Message::kIndex:
            return s + " (message " + std::to_string(index) + ")";
    }
    return s;
}

Expected<DocumentsSource> parse_documents_source(const std::string& name) {
    if (name == "none") return DocumentsSource::kNone;
    if (name == "parts") return DocumentsSource::kParts;
    if (name == "delimiter") return DocumentsSource::kDelimiter;
    return invalid_argument("unknown documents source '" + text::clip_for_message(name) + "' (none, parts, delimiter)");
}

Expected<std::pair<DocumentsSource, bool>> parse_documents_from_name(const std::string& name) {
    std::pair<DocumentsSource, bool> out{DocumentsSource::kNone, false};
    bool source_named = false;
    for (size_t b = 0; b <= name.size();) {
        const size_t e = std::min(name.find('+', b), name.size());
        const std::string part = name.substr(b, e - b);
        if (part == "known") {
            out.second = true;
        } else {
            auto source = parse_documents_source(part);
            if (!source.ok() || source_named) {
                return invalid_argument("unknown documents_from '" + text::clip_for_message(name) +
                                        "' (none, parts, delimiter, known, or parts+known, delimiter+known)");
            }
            out.first = *source;
            source_named = true;
        }
        b = e + 1;
    }
    if (out.first == DocumentsSource::kNone && source_named && out.second) {
        return invalid_argument("documents_from 'none+known' says both no documents and known ones");
    }
    return out;
}

Expected<std::pair<DocumentsFrom::Message, int32_t>> parse_documents_message(const std::string& name) {
    using M = DocumentsFrom::Message;
    if (name == "auto") return std::make_pair(M::kAuto, -1);
    if (name == "last_user") return std::make_pair(M::kLastUser, -1);
    if (name == "system") return std::make_pair(M::kSystem, -1);
    const auto digit = [](unsigned char c) { return std::isdigit(c) != 0; };
    if (!name.empty() && name.size() <= 6 && std::all_of(name.begin(), name.end(), digit)) {
        return std::make_pair(M::kIndex, int32_t(std::stoi(name)));
    }
    return invalid_argument("unknown documents message '" + text::clip_for_message(name) +
                            "' (auto, last_user, system, or an index)");
}

Expected<MessageDocuments> find_message_documents(const DocumentsFrom& from, const std::vector<std::string>& roles,
                                                  const std::vector<std::string>& content,
                                                  const std::vector<std::vector<ContentPart>>& parts,
                                                  int32_t max_documents, MatchBudget& budget) {
    using M = DocumentsFrom::Message;
    if (from.source == DocumentsSource::kNone || roles.empty()) return MessageDocuments{};
    const int32_t last_user = last_role(roles, "user");
    auto at = [&](int32_t m) -> Expected<MessageDocuments> {
        if (m < 0) return MessageDocuments{};
        // Only the last message's tail is the question; documents elsewhere end where the message does.
        const bool question = m == int32_t(roles.size()) - 1;
        if (from.source == DocumentsSource::kParts) return from_parts(m, content[m], parts[m], max_documents);
        return from_delimiter(m, question, content[m], *from.delimiter, max_documents, budget);
    };
    switch (from.message) {
        case M::kLastUser:
            return at(last_user);
        case M::kSystem:
            return at(first_role(roles, "system"));
        case M::kIndex:
            if (from.index >= int32_t(roles.size())) {
                return invalid_argument("the documents message index " + std::to_string(from.index) +
                                        " is past the last message (" + std::to_string(roles.size()) + " messages)");
            }
            return at(from.index);
        case M::kAuto: {
            LA_ASSIGN_OR_RETURN(auto found, at(last_user));
            if (!found.documents.empty()) return found;
            return at(first_role(roles, "system"));
        }
    }
    return MessageDocuments{};
}

}  // namespace lazyattn::server
