#include "grammar/counted_repetition.h"

#include <optional>
#include <vector>

namespace lazyattn::grammar {

namespace {

constexpr size_t kNone = std::string_view::npos;

// XGrammar's rule-name characters (its EBNF lexer's).
bool name_char(char c) {
    return c == '_' || c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

// A repetition range at text[i] == '{': {m}, {m,} or {m,n} with optional spaces. Sets *end past
// its '}' and *open when it has no upper bound; nullopt when text[i] starts none of them.
std::optional<int64_t> repetition_range(std::string_view text, size_t i, size_t* end, bool* open) {
    size_t j = i + 1;
    auto spaces = [&] {
        while (j < text.size() && text[j] == ' ') ++j;
    };
    auto number = [&]() -> std::optional<int64_t> {
        const size_t from = j;
        int64_t n = 0;
        while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
            if (n < (int64_t(1) << 40)) n = n * 10 + (text[j] - '0');
            ++j;
        }
        return j > from ? std::optional<int64_t>(n) : std::nullopt;
    };
    spaces();
    const std::optional<int64_t> lower = number();
    if (!lower) return std::nullopt;
    spaces();
    *open = false;
    if (j < text.size() && text[j] == ',') {
        ++j;
        spaces();
        *open = !number().has_value();
        spaces();
    }
    if (j >= text.size() || text[j] != '}') return std::nullopt;
    *end = j + 1;
    return lower;
}

// Copies a quoted literal or a character class starting at text[i] (its opening character)
// through its closing one, escapes included; returns the index past it.
size_t copy_quoted(std::string_view text, size_t i, char close, std::string& out) {
    out += text[i++];
    while (i < text.size()) {
        const char c = text[i++];
        out += c;
        if (c == '\\' && i < text.size()) {
            out += text[i++];
        } else if (c == close) {
            break;
        }
    }
    return i;
}

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The element text at out[from, to) without the space after it.
std::string_view element_at(const std::string& out, size_t from, size_t to) {
    while (to > from && space(out[to - 1])) --to;
    return std::string_view(out).substr(from, to - from);
}

// An element under `*` or `+` in `out`: [start, quantifier) is the element, `end` is past the
// quantifier.
struct Starred {
    size_t start = kNone, quantifier = kNone, end = kNone;
    bool plus = false;
};

// Whether the element at out[last, end of out) is the starred one again, with only space
// between them: X* X{m} (the same X), whose star XGrammar's parser also meets first.
bool repeats_the_starred(const std::string& out, const Starred& s, size_t last) {
    if (s.start == kNone || s.end > last) return false;
    for (size_t k = s.end; k < last; ++k) {
        if (!space(out[k])) return false;
    }
    return element_at(out, s.start, s.quantifier) == element_at(out, last, out.size());
}

}  // namespace

std::string with_counted_repetitions_first(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    // Where, in `out`, the element the next quantifier applies to begins (kNone: nothing can be
    // repeated here, as after `::=`, `|` or another quantifier), and where a rule name just ended
    // (a '(' right after it opens a macro call: the name belongs to the element).
    size_t last = kNone, name_end = kNone;
    struct Group {
        size_t start;       // the group's element start in `out` (its '(' or its macro's name)
        size_t outer_last;  // `last` outside it
    };
    std::vector<Group> groups;
    Starred starred;
    size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '#') {  // a comment, to the end of its line
            while (i < text.size() && text[i] != '\n') out += text[i++];
        } else if (c == '"' || c == '[') {
            last = out.size();
            i = copy_quoted(text, i, c == '"' ? '"' : ']', out);
        } else if (name_char(c)) {
            last = out.size();
            while (i < text.size() && name_char(text[i])) out += text[i++];
            name_end = out.size();
            continue;  // name_end stays valid for a '(' right after the name
        } else if (c == '(') {
            groups.push_back({name_end == out.size() && last != kNone ? last : out.size(), last});
            out += text[i++];
            last = kNone;
        } else if (c == ')') {
            out += text[i++];
            if (groups.empty()) {
                last = kNone;
            } else {
                last = groups.back().start;
                groups.pop_back();
            }
        } else if (c == '{') {
            size_t end = 0;
            bool open = false;
            const std::optional<int64_t> m = repetition_range(text, i, &end, &open);
            if (!m) {
                out += text[i++];
                last = kNone;
            } else if (*m >= kCountedRepetitionFrom && last != kNone &&
                       (open || repeats_the_starred(out, starred, last))) {
                // The counted part first, then the star: X{m,} -> X{m} X*; the same language
                // written star first, X* X{m} or X* X{m,n} -> X{m} X* (X+ X{m} -> X{m+1} X*).
                const std::string element(element_at(out, last, out.size()));
                int64_t count = *m;
                if (repeats_the_starred(out, starred, last)) {
                    count += starred.plus ? 1 : 0;
                    out.resize(starred.start);
                } else {
                    out.resize(last);
                }
                out += element + "{" + std::to_string(count) + "} " + element + "*";
                i = end;
                last = kNone;
                starred = {};
            } else {
                out.append(text.substr(i, end - i));
                i = end;
                last = kNone;
            }
        } else {
            // Space keeps the element open for a quantifier after it; any other operator
            // (`::=`, `|`, `*`, `+`, `?`, `=`) ends it.
            if ((c == '*' || c == '+') && last != kNone) starred = {last, out.size(), out.size() + 1, c == '+'};
            if (!space(c)) last = kNone;
            out += text[i++];
        }
        name_end = kNone;
    }
    return out;
}

}  // namespace lazyattn::grammar
