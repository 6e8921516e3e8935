// Open-ended repetitions counted first (grammar/counted_repetition.h): the EBNF rewrite itself,
// that every kind's engine text goes through it (a JSON schema's minLength and minItems, a regex,
// a GBNF grammar), and that the language is unchanged: a minLength string cannot close one
// character early and can close from there on, over the embedded model's vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "grammar/constraint_compiler.h"
#include "grammar/counted_repetition.h"
#include "grammar/grammar_engine.h"
#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn {
namespace {

using grammar::with_counted_repetitions_first;

TEST(CountedRepetition, OpenRangesFromFifteenPutTheCountFirst) {
    struct Case {
        const char* in;
        const char* out;
    };
    const Case cases[] = {
        // A character class, a literal, a rule name, a group, a macro call.
        {R"(root ::= [a-z]{20,})", R"(root ::= [a-z]{20} [a-z]*)"},
        {R"(root ::= "ab"{15,} "c")", R"(root ::= "ab"{15} "ab"* "c")"},
        {"root ::= item{100, }\nitem ::= [0-9]", "root ::= item{100} item*\nitem ::= [0-9]"},
        {R"(root ::= ("," x){99,} "]")", R"(root ::= ("," x){99} ("," x)* "]")"},
        {R"(root ::= Tag(("a", b)){16,})", R"(root ::= Tag(("a", b)){16} Tag(("a", b))*)"},
        // XGrammar's converter's minLength string.
        {R"(string ::= "\"" [^"\\\r\n]{1800,} "\"")", R"(string ::= "\"" [^"\\\r\n]{1800} [^"\\\r\n]* "\"")"},
        // Nested: the inner one first, then the group holding it.
        {R"(root ::= (a{20,} b){16,})", R"(root ::= (a{20} a* b){16} (a{20} a* b)*)"},
    };
    for (const Case& c : cases) EXPECT_EQ(with_counted_repetitions_first(c.in), c.out) << c.in;
}

// The same language written star first with the same element twice, as a request may write it.
TEST(CountedRepetition, AStarBeforeACountOfTheSameElementMovesAfterIt) {
    struct Case {
        const char* in;
        const char* out;
    };
    const Case cases[] = {
        {R"(root ::= [^"]* [^"]{1800} "\"")", R"(root ::= [^"]{1800} [^"]* "\"")"},
        {"root ::= a+ a{20}", "root ::= a{21} a*"},         // X+ X{m} = X{m+1,}
        {"root ::= a* a{20,30} b", "root ::= a{20} a* b"},  // X* X{m,n} = X{m,}
        {"root ::= a* a{20,}", "root ::= a{20} a*"},        //
        {"root ::= b a*a{16} c", "root ::= b a{16} a* c"},  // no space between
        {"root ::= (x y)* (x y){16}", "root ::= (x y){16} (x y)*"},
    };
    for (const Case& c : cases) EXPECT_EQ(with_counted_repetitions_first(c.in), c.out) << c.in;
    // Another element, another group, an alternative in between, or a count below 15: as written.
    for (const char* same : {"root ::= a* b{20}", "root ::= (a*) a{20}", "root ::= a* | a{20}", "root ::= a* a{10}",
                             "root ::= ab* b{20}"}) {
        EXPECT_EQ(with_counted_repetitions_first(same), same);
    }
}

TEST(CountedRepetition, LeavesEverythingElseAsItWas) {
    for (const char* same : {
             R"(root ::= [a-z]{14,})",       // below 15 XGrammar writes the count out itself
             R"(root ::= [a-z]{20,40})",     // bounded
             R"(root ::= [a-z]{1800})",      // exact
             R"(root ::= "x{20,}" [{]{2})",  // inside a literal; a class holding a brace
             R"(root ::= [\]{20,}] "a")",    // inside a class with an escaped bracket
             "root ::= \"a\" # a{20,}\n",    // a comment
             R"(root ::= "\"{20,}" | "b")",  // an escaped quote inside a literal
             R"(root ::= {20,} "a")",        // nothing before it: XGrammar's parser judges
             R"(root ::= "a"* {20,})",       // after another quantifier: left as written
         }) {
        EXPECT_EQ(with_counted_repetitions_first(same), same);
    }
}

// No open range of 15 or more left in a text (XGrammar would put its star first).
bool has_open_range_from_15(const std::string& ebnf) {
    static const std::regex open(R"(\{\s*(\d+)\s*,\s*\})");
    for (auto it = std::sregex_iterator(ebnf.begin(), ebnf.end(), open); it != std::sregex_iterator(); ++it) {
        if (std::stoll((*it)[1].str()) >= grammar::kCountedRepetitionFrom) return true;
    }
    return false;
}

TEST(CountedRepetition, EveryKindsEngineTextIsRewritten) {
    if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    struct Case {
        grammar::ConstraintKind kind;
        std::string text;
        std::string counted;
    };
    const Case cases[] = {
        {grammar::ConstraintKind::kJsonSchema,
         R"({"type": "object", "properties": {"story": {"type": "string", "minLength": 1800}}, "required": ["story"]})",
         "{1800}"},
        {grammar::ConstraintKind::kJsonSchema, R"({"type": "array", "items": {"type": "integer"}, "minItems": 100})",
         "{99}"},
        {grammar::ConstraintKind::kRegex, "[a-c]{40,}x", "{40}"},
        {grammar::ConstraintKind::kGrammar, R"(root ::= [a-z]{500,})", "{500}"},
    };
    for (const Case& c : cases) {
        grammar::ConstraintSpec spec;
        spec.kind = c.kind;
        spec.text = c.text;
        auto ebnf = grammar::engine_ebnf(spec);
        ASSERT_TRUE(ebnf.ok()) << ebnf.status().to_string();
        EXPECT_FALSE(has_open_range_from_15(*ebnf)) << c.text << "\n" << *ebnf;
        EXPECT_NE(ebnf->find(c.counted), std::string::npos) << c.text << "\n" << *ebnf;
    }
}

TEST(CountedRepetition, AMinLengthStringClosesAtItsLengthAndNotBefore) {
    if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model";
    auto file = loader::GgufFile::open(LAZYATTN_MODEL_PATH);
    ASSERT_TRUE(file.ok());
    auto tok = tokenizer::Tokenizer::from_gguf(**file);
    ASSERT_TRUE(tok.ok());
    grammar::ConstraintCompiler compiler(**tok);
    grammar::ConstraintSpec spec;
    spec.kind = grammar::ConstraintKind::kJsonSchema;
    constexpr int kMinLength = 40;
    spec.text = R"({"type": "object", "properties": {"s": {"type": "string", "minLength": )" +
                std::to_string(kMinLength) + R"(}}, "required": ["s"]})";
    auto compiled = compiler.compile(spec);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    auto matcher = compiled.value()->new_matcher();
    const auto quote = (*tok)->find_token("\"");
    const auto letter = (*tok)->find_token("a");
    ASSERT_TRUE(quote.has_value() && letter.has_value());
    auto allowed = [&](int32_t t) {
        matcher->prepare();
        const auto bits = matcher->bitmask();
        return (uint32_t(bits[size_t(t) / 32]) >> (t % 32) & 1u) != 0;
    };
    for (const int32_t t : (*tok)->encode(R"({"s": ")", false, false)) {
        ASSERT_TRUE(allowed(t));
        ASSERT_TRUE(matcher->accept(t));
    }
    for (int i = 0; i < kMinLength + 5; ++i) {
        SCOPED_TRACE("after " + std::to_string(i) + " characters");
        EXPECT_EQ(allowed(*quote), i >= kMinLength);
        ASSERT_TRUE(allowed(*letter));
        ASSERT_TRUE(matcher->accept(*letter));
    }
    ASSERT_TRUE(matcher->accept(*quote));
}

}  // namespace
}  // namespace lazyattn
