// The split works on code point ranges of the leniently decoded text. PCRE2 matches a re-encoded
// copy of it in which surrogates (which llama.cpp lets through, but which are not valid UTF-8) are
// replaced by U+E000, a private-use character of the same class for every rule here (not a letter,
// number or space); pieces are re-encoded from the original code points afterwards.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include <utility>

#include "core/check.h"
#include "core/utf8.h"

namespace lazyattn::tokenizer {

using namespace text;  // core/utf8.h, core/byte_unicode.h
namespace {

// llama.cpp's whitespace set (Unicode White_Space), as the body of a character class.
constexpr std::string_view kWhitespaceClass = "\\t-\\r\\x{85}\\p{Z}";

// llama.cpp's category tables are Unicode 15.1; Debian's PCRE2 (10.42) knows Unicode 14. These are
// the code points Unicode 15.0 and 15.1 added to L, N and P (none were removed or added to Z), so
// "\p{L}" etc. mean the same on both. With a newer PCRE2 they are redundant, not wrong.
constexpr std::string_view kLettersSince14 =
    "\\x{1123F}-\\x{11240}\\x{11F02}\\x{11F04}-\\x{11F10}\\x{11F12}-\\x{11F33}\\x{1342F}"
    "\\x{13441}-\\x{13446}\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}\\x{1E030}-\\x{1E06D}"
    "\\x{1E4D0}-\\x{1E4EB}\\x{2B739}\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}";
constexpr std::string_view kNumbersSince14 = "\\x{11F50}-\\x{11F59}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}";
constexpr std::string_view kPunctuationSince14 = "\\x{11B00}-\\x{11B09}\\x{11F43}-\\x{11F4F}";
constexpr std::string_view kMarksSince14 =
    "\\x{CF3}\\x{ECE}\\x{10EFD}-\\x{10EFF}\\x{11241}\\x{11F00}-\\x{11F01}\\x{11F03}\\x{11F34}-\\x{11F3A}"
    "\\x{11F3E}-\\x{11F42}\\x{13440}\\x{13447}-\\x{13455}\\x{1E08F}\\x{1E4EC}-\\x{1E4EF}";

// The class body for "\p{X}" with llama.cpp's Unicode 15.1 additions; empty for other properties.
std::string category_class_body(std::string_view property) {
    if (property == "L") return "\\p{L}" + std::string(kLettersSince14);
    if (property == "N") return "\\p{N}" + std::string(kNumbersSince14);
    if (property == "P") return "\\p{P}" + std::string(kPunctuationSince14);
    if (property == "M") return "\\p{M}" + std::string(kMarksSince14);
    return {};
}

constexpr std::string_view kGpt2Rule = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr std::string_view kLlama3Rule =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Rule =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen2's rule with combining marks (\p{M}) kept inside letter runs.
constexpr std::string_view kQwen35Rule =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// CJK ideographs, the blocks below them and Hangul, as "[一-龥ࠀ-一가-퟿]+" in llama.cpp.
constexpr std::string_view kDeepseekCjkRule = "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";

std::vector<std::string_view> rules_for(PreTokenizerKind kind) {
    switch (kind) {
        case PreTokenizerKind::kDefault:
            return {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2Rule, "\\p{N}+", "[0-9][0-9][0-9]"};
        case PreTokenizerKind::kGpt2:
            return {kGpt2Rule};
        case PreTokenizerKind::kLlama3:
            return {kLlama3Rule};
        case PreTokenizerKind::kQwen2:
            return {kQwen2Rule};
        case PreTokenizerKind::kQwen35:
            return {kQwen35Rule};
        case PreTokenizerKind::kGemma4:
            return {"[^\\n]+|[\\n]+"};
        case PreTokenizerKind::kStarcoder:
            return {"\\p{N}", kGpt2Rule};
        case PreTokenizerKind::kFalcon:
            return {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2Rule, "[0-9][0-9][0-9]"};
        case PreTokenizerKind::kDeepseekCoder:
            return {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kDeepseekCjkRule, "\\p{N}"};
    }
    return {};
}

struct NamedPreTokenizer {
    std::string_view name;
    PreTokenizerInfo info;
};

// Names and flags from llama.cpp's llama_vocab::impl::load.
constexpr NamedPreTokenizer kPreTokenizers[] = {
    {"default", {PreTokenizerKind::kDefault, false, false}},
    {"llama3", {PreTokenizerKind::kLlama3, true, true}},
    {"llama-v3", {PreTokenizerKind::kLlama3, true, true}},
    {"llama-bpe", {PreTokenizerKind::kLlama3, true, true}},
    {"falcon3", {PreTokenizerKind::kLlama3, true, true}},
    {"falcon-h1", {PreTokenizerKind::kLlama3, true, true}},
    {"pixtral", {PreTokenizerKind::kLlama3, true, true}},
    {"midm-2.0", {PreTokenizerKind::kLlama3, true, true}},
    {"lfm2", {PreTokenizerKind::kLlama3, true, true}},
    {"jina-v5-nano", {PreTokenizerKind::kLlama3, true, true}},
    {"dbrx", {PreTokenizerKind::kLlama3, false, false}},
    {"smaug-bpe", {PreTokenizerKind::kLlama3, false, false}},
    {"gpt-2", {PreTokenizerKind::kGpt2, false, false}},
    {"gpt2", {PreTokenizerKind::kGpt2, false, false}},
    {"phi-2", {PreTokenizerKind::kGpt2, false, false}},
    {"mpt", {PreTokenizerKind::kGpt2, false, false}},
    {"olmo", {PreTokenizerKind::kGpt2, false, false}},
    {"jais", {PreTokenizerKind::kGpt2, false, false}},
    {"trillion", {PreTokenizerKind::kGpt2, false, false}},
    {"exaone4", {PreTokenizerKind::kGpt2, false, false}},
    {"qwen2", {PreTokenizerKind::kQwen2, false, false}},
    {"deepseek-r1-qwen", {PreTokenizerKind::kQwen2, false, false}},
    {"stablelm2", {PreTokenizerKind::kQwen2, false, false}},
    {"megrez", {PreTokenizerKind::kQwen2, false, false}},
    {"kormo", {PreTokenizerKind::kQwen2, false, false}},
    {"f2llmv2", {PreTokenizerKind::kQwen2, false, false}},
    {"qwen35", {PreTokenizerKind::kQwen35, false, false}},
    // Gemma 4 (tokenizer model "gemma4"): SentencePiece-style BPE, BOS always added.
    {"gemma4", {PreTokenizerKind::kGemma4, false, true, true}},
    {"starcoder", {PreTokenizerKind::kStarcoder, false, false}},
    {"smollm", {PreTokenizerKind::kStarcoder, false, false}},
    {"refact", {PreTokenizerKind::kStarcoder, false, false}},
    {"command-r", {PreTokenizerKind::kStarcoder, false, false}},
    {"codeshell", {PreTokenizerKind::kStarcoder, false, false}},
    {"exaone", {PreTokenizerKind::kStarcoder, false, false}},
    {"minerva-7b", {PreTokenizerKind::kStarcoder, false, false}},
    {"falcon", {PreTokenizerKind::kFalcon, false, false}},
    {"deepseek-coder", {PreTokenizerKind::kDeepseekCoder, false, false}},
};

// The text as PCRE2 sees it, with the byte offset of every code point boundary.
struct Subject {
    std::vector<char32_t> cps;
    std::string text;
    std::vector<size_t> byte_of_cp;  // cps.size() + 1 entries
    std::vector<size_t> cp_of_byte;  // text.size() + 1 entries, meaningful at boundaries only
};

Subject make_subject(std::string_view raw) {
    Subject s;
    s.cps = decode_utf8_lenient(raw);
    s.byte_of_cp.reserve(s.cps.size() + 1);
    for (const char32_t cp : s.cps) {
        s.byte_of_cp.push_back(s.text.size());
        const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
        append_utf8(s.text, surrogate ? 0xE000 : cp);
    }
    s.byte_of_cp.push_back(s.text.size());
    s.cp_of_byte.assign(s.text.size() + 1, 0);
    for (size_t i = 0; i < s.byte_of_cp.size(); ++i) s.cp_of_byte[s.byte_of_cp[i]] = i;
    return s;
}

struct Range {
    size_t begin;  // code point indices
    size_t end;
};

// A JIT stack per thread: PCRE2's default 32 KiB is too small for long runs of one class.
struct ThreadMatchContext {
    pcre2_jit_stack* stack = nullptr;
    pcre2_match_context* context = nullptr;
    ThreadMatchContext() {
        stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
        context = pcre2_match_context_create(nullptr);
        if (stack != nullptr && context != nullptr) pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~ThreadMatchContext() {
        pcre2_match_context_free(context);
        pcre2_jit_stack_free(stack);
    }
};

pcre2_match_context* thread_match_context() {
    thread_local ThreadMatchContext ctx;
    return ctx.context;
}

}  // namespace

class PreTokenizer::Regex {
public:
    static Expected<std::shared_ptr<const Regex>> compile(std::string_view llama_pattern);
    ~Regex() { pcre2_code_free(code_); }

    // Appends to `out` the matches of this expression inside `range` and the gaps between them.
    void split(const Subject& s, Range range, pcre2_match_data* md, std::vector<Range>& out) const;

private:
    explicit Regex(pcre2_code* code) : code_(code) {}
    int match(const Subject& s, size_t begin, size_t length, size_t from, pcre2_match_data* md) const;

    pcre2_code* code_;
};

Expected<std::shared_ptr<const PreTokenizer::Regex>> PreTokenizer::Regex::compile(std::string_view llama_pattern) {
    const std::string pattern = pcre2_pattern_from_llama(llama_pattern);
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof(message));
        return internal_error("pre-tokenizer regex '" + pattern + "' does not compile at offset " +
                              std::to_string(error_offset) + ": " + reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if unavailable
    return std::shared_ptr<const Regex>(new Regex(code));
}

int PreTokenizer::Regex::match(const Subject& s, size_t begin, size_t length, size_t from, pcre2_match_data* md) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.text.data() + begin);
    int rc = pcre2_match(code_, subject, length, from, PCRE2_NO_UTF_CHECK, md, thread_match_context());
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_, subject, length, from, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
    }
    return rc;
}

void PreTokenizer::Regex::split(const Subject& s, Range range, pcre2_match_data* md, std::vector<Range>& out) const {
    const size_t begin = s.byte_of_cp[range.begin];
    const size_t length = s.byte_of_cp[range.end] - begin;
    auto cp_at = [&](size_t byte) { return s.cp_of_byte[begin + byte]; };
    size_t from = 0;
    size_t prev_end = 0;
    while (from < length) {
        // Any failure other than "no match" (resource limits on pathological input) leaves the
        // rest of the range as one piece rather than losing text.
        if (match(s, begin, length, from, md) < 0) break;
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t match_begin = ov[0];
        const size_t match_end = ov[1];
        if (match_end == match_begin) {  // empty match: none of the rules has one; step over it
            const size_t cp = cp_at(match_begin);
            if (cp >= range.end) break;
            from = s.byte_of_cp[cp + 1] - begin;
            continue;
        }
        if (match_begin > prev_end) out.push_back({cp_at(prev_end), cp_at(match_begin)});
        out.push_back({cp_at(match_begin), cp_at(match_end)});
        prev_end = match_end;
        from = match_end;
    }
    if (prev_end < length) out.push_back({cp_at(prev_end), range.end});
}

Expected<PreTokenizerInfo> lookup_pre_tokenizer(std::string_view pre_type) {
    if (pre_type.empty()) return PreTokenizerInfo{};
    for (const auto& entry : kPreTokenizers) {
        if (entry.name == pre_type) return entry.info;
    }
    return unsupported("pre-tokenizer type '" + std::string(pre_type) + "' (tokenizer.ggml.pre) is not supported");
}

Expected<PreTokenizer> PreTokenizer::create(std::string_view pre_type) {
    LA_ASSIGN_OR_RETURN(const PreTokenizerInfo info, lookup_pre_tokenizer(pre_type));
    return create(info.kind);
}

Expected<PreTokenizer> PreTokenizer::create(PreTokenizerKind kind) {
    PreTokenizer pre;
    pre.kind_ = kind;
    for (const std::string_view rule : rules_for(kind)) {
        LA_ASSIGN_OR_RETURN(auto regex, Regex::compile(rule));
        pre.stages_.push_back(std::move(regex));
    }
    return pre;
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
    const Subject subject = make_subject(text);
    std::vector<Range> pieces;
    if (!subject.cps.empty()) pieces.push_back({0, subject.cps.size()});

    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    LA_CHECK(md != nullptr);
    std::vector<Range> next;
    for (const auto& stage : stages_) {
        next.clear();
        for (const Range r : pieces) stage->split(subject, r, md, next);
        pieces.swap(next);
    }
    pcre2_match_data_free(md);

    std::vector<std::string> words;
    words.reserve(pieces.size());
    for (const Range r : pieces) {
        std::string word;
        for (size_t i = r.begin; i < r.end; ++i) append_utf8(word, subject.cps[i]);
        words.push_back(std::move(word));
    }
    return words;
}

std::string pcre2_pattern_from_llama(std::string_view pattern) {
    const std::string ws(kWhitespaceClass);
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[++i];
            const size_t close = pattern.find('}', i);
            if (e == 'p' && i + 1 < pattern.size() && pattern[i + 1] == '{' && close != pattern.npos) {
                const std::string body = category_class_body(pattern.substr(i + 2, close - i - 2));
                if (!body.empty()) {
                    out += in_class ? body : "[" + body + "]";
                    i = close;
                    continue;
                }
            }
            if (e == 's') {
                out += in_class ? ws : "[" + ws + "]";
            } else if (e == 'S') {
                LA_CHECK_MSG(!in_class, "\\S inside a class in '%.*s'", static_cast<int>(pattern.size()),
                             pattern.data());
                out += "[^" + ws + "]";
            } else {
                out += c;
                out += e;
            }
            continue;
        }
        if (c == '[' && !in_class)
            in_class = true;
        else if (c == ']' && in_class)
            in_class = false;
        if (c == '$' && !in_class) {
            out += "\\z";
            continue;
        }
        out += c;
    }
    return out;
}

}  // namespace lazyattn::tokenizer
