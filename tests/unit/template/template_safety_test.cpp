// A template is untrusted input (a GGUF from anywhere, a --chat-template file): whatever it does,
// parsing and rendering end quickly with a clear error, never a crash, an unbounded loop or
// unbounded memory.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "template/template.h"

namespace lazyattn::tmpl {
namespace {

Status render_status(const std::string& source, const RenderLimits& limits = {}) {
    auto t = Template::parse(source);
    if (!t.ok()) return t.status();
    auto out = t->render(Value::dict(), limits, 0);
    return out.ok() ? Status() : out.status();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(TemplateSafety, HostileTemplatesHitALimitQuickly) {
    const std::pair<const char*, const char*> hostile[] = {
        {"{% for i in range(10**12) %}x{% endfor %}", "range too big"},
        {"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "loop iterations"},
        {"{{ 'x' * 10**12 }}", "string repetition"},
        {"{{ ([1] * 100000) * 100000 }}", "loop iterations"},
        {"{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
         "MiB of text"},
        {"{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}", "exceeds"},
        {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nested deeper"},
        {"{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}", "nested more than"},
        {"{{ 'x'|indent(10**9) }}", "indent width"},
        {"{{ 10**18 * 10 }}", "integer overflow"},
    };
    RenderLimits limits;
    limits.max_output_bytes = 8u << 20;
    for (const auto& [source, message] : hostile) {
        const auto start = std::chrono::steady_clock::now();
        const Status s = render_status(source, limits);
        EXPECT_LT(seconds_since(start), 10.0) << source;
        ASSERT_FALSE(s.ok()) << source;
        EXPECT_NE(s.message().find(message), std::string::npos) << source << ": " << s.message();
    }
}

TEST(TemplateSafety, LimitsAreReportedAsOutOfRange) {
    const Status s = render_status("{% for i in range(10) %}{% endfor %}", {.max_loop_iterations = 5});
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
    EXPECT_NE(s.message().find("more than 5 loop iterations"), std::string::npos);
}

TEST(TemplateSafety, DeepNestingIsRefusedNotAStackOverflow) {
    const std::string parens = std::string(100000, '(') + "1" + std::string(100000, ')');
    EXPECT_FALSE(render_status("{{ " + parens + " }}").ok());
    std::string ifs;
    for (int i = 0; i < 50000; ++i) ifs += "{% if true %}";
    EXPECT_FALSE(render_status(ifs).ok());
    std::string nots = "{{ ";
    for (int i = 0; i < 100000; ++i) nots += "not ";
    EXPECT_FALSE(render_status(nots + "1 }}").ok());
    std::string negs = "{{ ";
    for (int i = 0; i < 100000; ++i) negs += "-";
    EXPECT_FALSE(render_status(negs + "1 }}").ok());
    std::string filters = "{{ 1";
    for (int i = 0; i < 100000; ++i) filters += "|abs";
    EXPECT_FALSE(render_status(filters + " }}").ok());
}

// Random token soup from the template alphabet: every input ends in an output or an error.
TEST(TemplateSafety, RandomTemplatesNeverCrash) {
    const char* pieces[] = {"{{",    "}}",          "{%",     "%}",    "{#",      "#}",       "-",    "+",   " ",
                            "\n",    "if",          "for",    "in",    "endfor",  "endif",    "else", "set", "x",
                            "=",     "(",           ")",      "[",     "]",       "{",        "}",    "'",   "\"",
                            "|",     "trim",        "length", "1",     "0",       ".",        ",",    ":",   "loop",
                            "macro", "endmacro",    "is",     "not",   "defined", "range(3)", "~",    "*",   "**",
                            "//",    "namespace()", "ns.a",   "break", "elif",    "none",     "\\"};
    std::mt19937 rng(1234);
    std::uniform_int_distribution<size_t> pick(0, std::size(pieces) - 1), len(1, 40);
    for (int i = 0; i < 3000; ++i) {
        std::string source;
        for (size_t n = len(rng); n > 0; --n) source += pieces[pick(rng)];
        auto t = Template::parse(source);
        if (!t.ok()) continue;
        (void)t->render(Value::dict(), {}, 0);
    }
    // Arbitrary bytes, invalid UTF-8 included.
    std::uniform_int_distribution<int> byte(0, 255);
    for (int i = 0; i < 2000; ++i) {
        std::string source = "{{ '";
        for (size_t n = len(rng); n > 0; --n) source.push_back(static_cast<char>(byte(rng)));
        source += "'|trim|length }}{{ x[";
        source.push_back(static_cast<char>(byte(rng)));
        source += "] }}";
        auto t = Template::parse(source);
        if (t.ok()) (void)t->render(Value::dict(), {}, 0);
    }
}

}  // namespace
}  // namespace lazyattn::tmpl
