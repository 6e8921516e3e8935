// Jinja's lexer with Hugging Face's chat-template settings (trim_blocks, lstrip_blocks): splits a
// template into text and the tokens of {{ ... }} / {% ... %} tags, applying whitespace control as
// it goes ({%- -%} strip all whitespace on that side, {%+ +%} keep it, a block tag's first newline
// is dropped, spaces before a block tag alone on its line are dropped); comments vanish. As in
// jinja2, newlines are normalised to "\n" and one trailing newline of the source is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lazyattn::tmpl {

enum class TokenKind {
    kText,           // template text to output as is
    kVariableBegin,  // {{
    kVariableEnd,    // }}
    kBlockBegin,     // {%
    kBlockEnd,       // %}
    kName,
    kString,  // text: the literal's value, escapes applied
    kInteger,
    kFloat,
    kOperator,  // text: "+", "//", "[", ...
    kEnd,
};

struct Token {
    TokenKind kind = TokenKind::kEnd;
    std::string text;
    int64_t integer = 0;
    double number = 0;
    int line = 1;
};

// Throws TemplateError (with the line) on an unterminated tag, comment or string, or a character
// that starts no token.
std::vector<Token> tokenize(std::string_view source);

}  // namespace lazyattn::tmpl
