#include "template/lexer.h"

#include <cerrno>
#include <cstdlib>

#include "core/utf8.h"
#include "template/python_text.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

// "\r\n" and "\r" become "\n"; one trailing newline goes (jinja2's keep_trailing_newline=False).
std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out.push_back('\n');
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out.push_back(source[i]);
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

// Python's \s on the code point at `pos`; its byte length in `len`.
bool space_at(std::string_view s, size_t pos, size_t& len) {
    const text::Utf8Decoded d = text::decode_utf8_one(s, pos);
    len = d.length;
    return d.status == text::Utf8Status::kOk && is_python_space(d.code_point);
}

std::string rstrip_space(std::string_view s) { return python_strip(s, nullptr, false, true); }

bool all_space(std::string_view s) {
    for (size_t pos = 0; pos < s.size();) {
        size_t len = 0;
        if (!space_at(s, pos, len)) return false;
        pos += len;
    }
    return !s.empty();
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Python's unicode-escape decoding, which jinja2 applies to string literals.
std::string unescape(std::string_view raw, int line) {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\' || i + 1 == raw.size()) {
            out.push_back(raw[i]);
            continue;
        }
        const char e = raw[++i];
        switch (e) {
            case '\n':
                break;  // line continuation
            case '\\':
            case '\'':
            case '"':
                out.push_back(e);
                break;
            case 'a':
                out.push_back('\a');
                break;
            case 'b':
                out.push_back('\b');
                break;
            case 'f':
                out.push_back('\f');
                break;
            case 'n':
                out.push_back('\n');
                break;
            case 'r':
                out.push_back('\r');
                break;
            case 't':
                out.push_back('\t');
                break;
            case 'v':
                out.push_back('\v');
                break;
            case 'x':
            case 'u':
            case 'U': {
                const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                uint32_t cp = 0;
                for (size_t k = 0; k < digits; ++k) {
                    const int h = i + 1 + k < raw.size() ? hex_value(raw[i + 1 + k]) : -1;
                    if (h < 0) throw TemplateError("truncated \\" + std::string(1, e) + " escape in a string", line);
                    cp = cp * 16 + static_cast<uint32_t>(h);
                }
                if (cp > text::kMaxCodePoint) throw TemplateError("escape beyond U+10FFFF in a string", line);
                i += digits;
                text::append_utf8(out, cp);
                break;
            }
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = static_cast<uint32_t>(e - '0');
                    for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k)
                        cp = cp * 8 + static_cast<uint32_t>(raw[++i] - '0');
                    text::append_utf8(out, cp);
                } else {
                    out.push_back('\\');  // unknown escapes stay as written
                    out.push_back(e);
                }
        }
    }
    return out;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

constexpr std::string_view kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                           "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};

class Lexer {
public:
    explicit Lexer(std::string src) : src_(std::move(src)) {}

    std::vector<Token> run() {
        bool line_starting = true;
        while (pos_ < src_.size()) {
            const size_t tag = find_tag(pos_);
            std::string text = src_.substr(pos_, tag - pos_);
            if (tag == src_.size()) {
                emit_text(std::move(text));
                break;
            }
            const char kind = src_[tag + 1];
            const char sign =
                tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
            if (sign == '-') {
                text = rstrip_space(text);
            } else if (sign != '+' && kind != '{') {             // lstrip_blocks: block tags and comments
                const size_t line_start = text.rfind('\n') + 1;  // npos + 1 == 0
                if ((line_start > 0 || line_starting) && all_space(std::string_view(text).substr(line_start)))
                    text.resize(line_start);
            }
            emit_text(std::move(text));
            pos_ = tag + 2 + (sign ? 1 : 0);
            if (kind == '#') {
                skip_comment();
            } else {
                lex_tag(kind == '{');
            }
            line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
        }
        tokens_.push_back({TokenKind::kEnd, "", 0, 0, line_});
        return std::move(tokens_);
    }

private:
    size_t find_tag(size_t from) const {
        for (size_t i = from; i + 1 < src_.size(); ++i) {
            if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return src_.size();
    }

    void emit_text(std::string text) {
        sync_line();
        if (!text.empty()) tokens_.push_back({TokenKind::kText, std::move(text), 0, 0, line_});
    }

    // Lines are counted on the source as it is consumed, stripped whitespace included.
    void sync_line() {
        for (; counted_ < pos_ && counted_ < src_.size(); ++counted_) {
            if (src_[counted_] == '\n') ++line_;
        }
    }

    // After a closing "-%}" / "-}}" / "-#}": all whitespace; after a plain block/comment end, one
    // newline (trim_blocks).
    void after_close(char sign, bool trim_newline) {
        if (sign == '-') {
            size_t len = 0;
            while (pos_ < src_.size() && space_at(src_, pos_, len)) pos_ += len;
        } else if (sign == 0 && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
        }
    }

    void skip_comment() {
        sync_line();
        const size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) throw TemplateError("unterminated comment: missing '#}'", line_);
        const char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
        pos_ = end + 2;
        after_close(sign, true);
        sync_line();
    }

    void lex_tag(bool variable) {
        sync_line();
        tokens_.push_back({variable ? TokenKind::kVariableBegin : TokenKind::kBlockBegin, "", 0, 0, line_});
        std::vector<char> brackets;
        const std::string_view close = variable ? "}}" : "%}";
        while (true) {
            while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\n' ||
                                          src_[pos_] == '\r' || src_[pos_] == '\f' || src_[pos_] == '\v')) {
                if (src_[pos_] == '\n') ++line_;
                ++pos_;
                counted_ = pos_;
            }
            if (pos_ >= src_.size())
                throw TemplateError(std::string("unexpected end of template: missing '") + std::string(close) + "'",
                                    line_);
            const std::string_view rest = std::string_view(src_).substr(pos_);
            if (brackets.empty()) {
                const char sign = rest[0] == '-' || (rest[0] == '+' && !variable) ? rest[0] : 0;
                if (rest.substr(sign ? 1 : 0).starts_with(close)) {
                    tokens_.push_back({variable ? TokenKind::kVariableEnd : TokenKind::kBlockEnd, "", 0, 0, line_});
                    pos_ += close.size() + (sign ? 1 : 0);
                    after_close(sign, !variable);
                    sync_line();
                    return;
                }
            }
            const char c = rest[0];
            if (is_name_start(c)) {
                size_t n = 1;
                while (n < rest.size() && (is_name_start(rest[n]) || is_digit(rest[n]))) ++n;
                push(TokenKind::kName, std::string(rest.substr(0, n)), n);
            } else if (c == '\'' || c == '"') {
                lex_string(c);
            } else if (is_digit(c)) {
                lex_number(rest);
            } else {
                lex_operator(rest, brackets);
            }
        }
    }

    void push(TokenKind kind, std::string text, size_t consumed) {
        tokens_.push_back({kind, std::move(text), 0, 0, line_});
        pos_ += consumed;
        counted_ = pos_;
    }

    void lex_string(char quote) {
        const int start_line = line_;
        size_t i = pos_ + 1;
        while (i < src_.size() && src_[i] != quote) {
            if (src_[i] == '\\') ++i;
            if (i < src_.size() && src_[i] == '\n') ++line_;
            ++i;
        }
        if (i >= src_.size()) throw TemplateError("unterminated string literal", start_line);
        tokens_.push_back({TokenKind::kString,
                           unescape(std::string_view(src_).substr(pos_ + 1, i - pos_ - 1), start_line), 0, 0,
                           start_line});
        pos_ = i + 1;
        counted_ = pos_;
    }

    void lex_number(std::string_view rest) {
        size_t n = 0;
        auto digits = [&] {
            while (n < rest.size() &&
                   (is_digit(rest[n]) || (rest[n] == '_' && n + 1 < rest.size() && is_digit(rest[n + 1]))))
                ++n;
        };
        digits();
        bool is_float = false;
        if (n + 1 < rest.size() && rest[n] == '.' && is_digit(rest[n + 1])) {
            is_float = true;
            ++n;
            digits();
        }
        if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
            size_t m = n + 1;
            if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
            if (m < rest.size() && is_digit(rest[m])) {
                is_float = true;
                n = m;
                digits();
            }
        }
        std::string text;
        for (char ch : rest.substr(0, n)) {
            if (ch != '_') text.push_back(ch);
        }
        Token t{is_float ? TokenKind::kFloat : TokenKind::kInteger, text, 0, 0, line_};
        errno = 0;
        if (is_float) {
            t.number = std::strtod(text.c_str(), nullptr);
        } else {
            t.integer = std::strtoll(text.c_str(), nullptr, 10);
            if (errno == ERANGE) throw TemplateError("integer literal " + text + " is too large", line_);
        }
        tokens_.push_back(std::move(t));
        pos_ += n;
        counted_ = pos_;
    }

    void lex_operator(std::string_view rest, std::vector<char>& brackets) {
        for (std::string_view op : kOperators) {
            if (!rest.starts_with(op)) continue;
            const char c = op[0];
            if (op.size() == 1 && (c == '(' || c == '[' || c == '{')) {
                if (brackets.size() >= static_cast<size_t>(kMaxNesting))
                    throw TemplateLimitError("brackets nested too deep", line_);
                brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
            } else if (op.size() == 1 && (c == ')' || c == ']' || c == '}')) {
                if (brackets.empty() || brackets.back() != c)
                    throw TemplateError(std::string("unexpected '") + c + "'", line_);
                brackets.pop_back();
            }
            push(TokenKind::kOperator, std::string(op), op.size());
            return;
        }
        throw TemplateError(std::string("unexpected character '") + rest[0] + "' in a tag", line_);
    }

    std::string src_;
    size_t pos_ = 0;
    size_t counted_ = 0;  // source bytes already scanned for newlines
    int line_ = 1;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(normalize_source(source)).run(); }

}  // namespace lazyattn::tmpl
