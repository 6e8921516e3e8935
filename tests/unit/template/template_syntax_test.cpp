// The lexer and parser: whitespace control under trim_blocks/lstrip_blocks, newline normalisation,
// literals and tag edge cases, and syntax errors reported with their line (jinja2 refuses each of
// these too).
#include <gtest/gtest.h>

#include "template/template.h"

namespace lazyattn::tmpl {
namespace {

std::string render(const std::string& source, const Value& context = Value::dict()) {
    auto t = Template::parse(source);
    if (!t.ok()) return "PARSE ERROR: " + t.status().message();
    auto out = t->render(context, {}, 0);
    return out.ok() ? *out : "ERROR: " + out.status().message();
}

TEST(TemplateSyntax, TextOnlyAndExpressions) {
    EXPECT_EQ(render(""), "");
    EXPECT_EQ(render("plain { text } with {braces}"), "plain { text } with {braces}");
    EXPECT_EQ(render("a{{ 1 + 2 }}b"), "a3b");
    EXPECT_EQ(render("{{ '}}' }}{{ \"%}\" }}"), "}}%}");
    EXPECT_EQ(render("{{ {'a': {'b': 1}} }}"), "{'a': {'b': 1}}");  // '}}' inside brackets closes nothing
    EXPECT_EQ(render("{{ 'a' 'b' }}"), "ab");                       // adjacent literals join
}

TEST(TemplateSyntax, NewlinesAreNormalisedAndOneTrailingNewlineDropped) {
    EXPECT_EQ(render("a\r\nb\rc\n"), "a\nb\nc");
    EXPECT_EQ(render("a\n\n"), "a\n");
    EXPECT_EQ(render("{% if true %}\r\nx{% endif %}"), "x");  // trim_blocks after normalisation
}

TEST(TemplateSyntax, WhitespaceControl) {
    // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before a block
    // tag alone on its line goes; expressions keep both.
    EXPECT_EQ(render("{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}\n"), "  1\n  2\n");
    EXPECT_EQ(render("  {{ 1 }}\n"), "  1");
    EXPECT_EQ(render("a\n  {%- if true -%}\n  b\n  {%- endif %}\nc"), "abc");
    EXPECT_EQ(render("a {# note #}\nb"), "a b");
    EXPECT_EQ(render("  {#- note #}\nb"), "b");
    EXPECT_EQ(render("x  {%+ if true %}y{% endif %}"), "x  y");
    EXPECT_EQ(render("{% if true +%}\nkept{% endif %}"), "\nkept");
    EXPECT_EQ(render("{{ 1 -}}   \n\t x"), "1x");
}

TEST(TemplateSyntax, LiteralEscapes) {
    EXPECT_EQ(render(R"({{ 'a\nb\t\\\'\"' }})"), "a\nb\t\\'\"");
    EXPECT_EQ(render(R"({{ '\u00e9\x41\101\d' }})"), "\u00e9AA\\d");  // unknown escapes stay
    EXPECT_EQ(render(R"({{ "it's" }})"), "it's");
}

TEST(TemplateSyntax, ErrorsNameTheLine) {
    const std::pair<const char*, const char*> errors[] = {
        {"{% if %}", "line 1"},
        {"a\n{% if true %}", "expected 'elif'"},
        {"{{ 1 + }}", "unexpected '}}'"},
        {"{% endfor %}", "unknown tag 'endfor'"},
        {"{% for x in l %}{% endif %}", "unknown tag 'endif'"},
        {"\n\n{{ 'abc }}", "line 3: unterminated string"},
        {"{% break %}", "outside of a loop"},
        {"{% macro m() %}{% break %}{% endmacro %}", "outside of a loop"},
        {"{% foo %}", "unknown tag 'foo'"},
        {"{# unterminated", "unterminated comment"},
        {"{{ (1 }}", "unexpected '}'"},
        {"{{ x ]] }}", "unexpected ']'"},
        {"{{ 1 ", "missing '}}'"},
        {"{{ x | }}", "expected a name"},
        {"{{ 99999999999999999999 }}", "too large"},
        {"{{ a $ b }}", "unexpected character '$'"},
        {"{% for x in l recursive %}{% endfor %}", "not supported"},
    };
    for (const auto& [source, message] : errors) {
        auto t = Template::parse(source);
        ASSERT_FALSE(t.ok()) << source;
        EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(t.status().message().find(message), std::string::npos) << source << ": " << t.status().message();
        EXPECT_EQ(t.status().message().rfind("template line ", 0), 0u) << t.status().message();
    }
}

}  // namespace
}  // namespace lazyattn::tmpl
