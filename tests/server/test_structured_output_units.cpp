// Structured output, below the HTTP layer: every peer's spelling parsed into one ConstraintSpec,
// the compiler's bounds and cache, and the sampler's mask over real vocabularies (the embedded
// SmolLM2's byte-level BPE and a SentencePiece vocabulary with byte fallback): every sampled token
// is one the grammar allowed, and the decoded output is a document of the grammar.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "engine/sequence/sampler.h"
#include "grammar/constraint_compiler.h"
#include "loader/gguf_file.h"
#include "server/constraint_request.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace lazyattn {
namespace {

using grammar::ConstraintKind;
using grammar::ConstraintSpec;
using nlohmann::json;

std::optional<ConstraintSpec> parsed(const json& body, std::optional<server::ApiError>* error = nullptr) {
    std::optional<ConstraintSpec> spec;
    auto e = server::parse_constraint(body, spec);
    if (error) *error = e;
    EXPECT_TRUE(error || !e) << (e ? e->message : "");
    return spec;
}

TEST(StructuredOutputParse, EveryPeerSpellingGivesOneSpec) {
    const json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "string"}}}}}};
    struct Case {
        json body;
        ConstraintKind kind;
        std::string field;
    };
    const std::vector<Case> cases = {
        {{{"response_format", {{"type", "json_object"}}}}, ConstraintKind::kJsonObject, "response_format"},
        {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}},
         ConstraintKind::kJsonSchema,
         "response_format.json_schema.schema"},
        {{{"response_format", {{"type", "json_object"}, {"schema", schema}}}},
         ConstraintKind::kJsonSchema,
         "response_format.schema"},
        {{{"grammar", "root ::= \"a\""}}, ConstraintKind::kGrammar, "grammar"},
        {{{"json_schema", schema}}, ConstraintKind::kJsonSchema, "json_schema"},
        {{{"guided_json", schema.dump()}}, ConstraintKind::kJsonSchema, "guided_json"},
        {{{"guided_regex", "[a-z]+"}}, ConstraintKind::kRegex, "guided_regex"},
        {{{"guided_choice", {"yes", "no"}}}, ConstraintKind::kChoice, "guided_choice"},
        {{{"guided_grammar", "root ::= \"a\""}}, ConstraintKind::kGrammar, "guided_grammar"},
        {{{"structured_outputs", {{"choice", {"a", "b"}}}}}, ConstraintKind::kChoice, "structured_outputs.choice"},
        {{{"structured_outputs", {{"json", schema}}}}, ConstraintKind::kJsonSchema, "structured_outputs.json"},
        {{{"structured_outputs", {{"json_object", true}}}},
         ConstraintKind::kJsonObject,
         "structured_outputs.json_object"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.body.dump());
        auto spec = parsed(c.body);
        ASSERT_TRUE(spec.has_value());
        EXPECT_EQ(spec->kind, c.kind);
        EXPECT_EQ(spec->field, c.field);
    }
    // No constraint: text, empty strings, nulls.
    EXPECT_FALSE(parsed({{"response_format", {{"type", "text"}}}}).has_value());
    EXPECT_FALSE(parsed({{"grammar", ""}, {"json_schema", nullptr}}).has_value());
    // strict: false reaches the spec (OpenAI's default is strict).
    auto loose = parsed(
        {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", schema}, {"strict", false}}}}}});
    ASSERT_TRUE(loose.has_value());
    EXPECT_FALSE(loose->strict);
    // The generation parser carries it.
    server::GenerationRequest g;
    ASSERT_FALSE(
        server::parse_generation_request({{"prompt", "x"}, {"response_format", {{"type", "json_object"}}}}, false, g));
    ASSERT_TRUE(g.constraint.has_value());
}

TEST(StructuredOutputParse, BadFieldsAreRefusedByName) {
    const std::vector<std::pair<json, std::string>> bad = {
        {{{"response_format", {{"type", "xml"}}}}, "response_format.type"},
        {{{"response_format", "json"}}, "response_format"},
        {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}}},
         "response_format.json_schema.schema"},
        {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", 5}}}}}},
         "response_format.json_schema.schema"},
        {{{"grammar", 5}}, "grammar"},
        {{{"guided_json", "{not json"}}, "guided_json"},
        {{{"guided_choice", "yes"}}, "guided_choice"},
        {{{"guided_choice", {"yes", 3}}}, "guided_choice[1]"},
        {{{"structured_outputs", {{"structural_tag", "x"}}}}, "structured_outputs.structural_tag"},
        {{{"structured_outputs", {{"regex", "a"}, {"choice", {"b"}}}}}, "structured_outputs"},
        {{{"grammar", "root ::= \"a\""}, {"guided_regex", "a"}}, "guided_regex"},
    };
    for (const auto& [body, field] : bad) {
        SCOPED_TRACE(body.dump());
        std::optional<server::ApiError> e;
        parsed(body, &e);
        ASSERT_TRUE(e.has_value());
        EXPECT_EQ(e->http_status, 400);
        EXPECT_EQ(e->param, field) << e->message;
    }
}

std::unique_ptr<tokenizer::Tokenizer> smollm2_tokenizer() {
    auto file = loader::GgufFile::open(LAZYATTN_MODEL_PATH);
    if (!file.ok()) return nullptr;
    auto tok = tokenizer::Tokenizer::from_gguf(**file);
    return tok.ok() ? std::move(tok).value() : nullptr;
}

// A SentencePiece vocabulary with byte fallback: <unk> <s> </s>, the 256 byte tokens, pieces.
std::unique_ptr<tokenizer::Tokenizer> spm_tokenizer() {
    tokenizer::VocabData d;
    d.model = "llama";
    auto add = [&](const std::string& text, tokenizer::TokenType type) {
        d.tokens.push_back(text);
        d.scores.push_back(-1.0);
        d.token_types.push_back(int64_t(type));
    };
    add("<unk>", tokenizer::TokenType::kUnknown);
    add("<s>", tokenizer::TokenType::kControl);
    add("</s>", tokenizer::TokenType::kControl);
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
        add(hex, tokenizer::TokenType::kByte);
    }
    for (const char* p : {"\xE2\x96\x81", "a", "b", "c", "ab", "abc",
                          "\xE2\x96\x81"
                          "ab",
                          "ba", "cc"}) {
        add(p, tokenizer::TokenType::kNormal);
    }
    d.bos_id = 1;
    d.eos_id = 2;
    auto tok = tokenizer::Tokenizer::from_vocab(d);
    return tok.ok() ? std::move(tok).value() : nullptr;
}

// Samples up to `max_steps` tokens from random logits (seeded; a model's logits would only make
// the grammar's choices likelier) through the engine's Sampler with the constraint, checking
// every token against a second matcher's mask. Returns the decoded text (without the stop
// token) and whether a stop token ended it.
std::pair<std::string, bool> sample_constrained(const tokenizer::Tokenizer& tok,
                                                std::shared_ptr<const grammar::CompiledConstraint> compiled,
                                                float temperature, uint64_t seed, int max_steps,
                                                int32_t extra_vocab = 0) {
    engine::SamplingParams p;
    p.temperature = temperature;
    p.seed = seed;
    p.constraint = compiled;
    engine::Sampler sampler(p);
    auto checker = compiled->new_matcher();
    const int32_t vocab = tok.vocab_size() + extra_vocab;  // a model's padded rows past the vocabulary
    std::mt19937 rng{uint32_t(seed)};
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<int32_t> history, generated;
    std::vector<float> logits(static_cast<size_t>(vocab)), masked;
    for (int step = 0; step < max_steps; ++step) {
        for (float& l : logits) l = normal(rng);
        masked = logits;
        checker->mask_logits(masked);
        const int32_t t = sampler.sample(logits.data(), vocab, history, 0);
        EXPECT_TRUE(t >= 0 && t < tok.vocab_size()) << t;
        if (t < 0 || t >= vocab) break;
        EXPECT_TRUE(std::isfinite(masked[size_t(t)])) << "step " << step << ": token " << t << " was masked";
        EXPECT_TRUE(checker->accept(t)) << "step " << step << ": token " << t;
        history.push_back(t);
        if (tok.is_end_of_generation(t)) return {tok.decode(generated), true};
        generated.push_back(t);
    }
    return {tok.decode(generated), false};
}

class StructuredOutputMask : public ::testing::Test {
protected:
    void SetUp() override {
        if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    }
};

TEST_F(StructuredOutputMask, JsonSchemaOverTheEmbeddedVocabulary) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model";
    auto tok = smollm2_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::ConstraintCompiler compiler(*tok);
    ConstraintSpec spec;
    spec.kind = ConstraintKind::kJsonSchema;
    spec.text = R"({"type":"object","properties":{
        "answer":{"enum":["yes","no","maybe"]},
        "score":{"type":"integer","minimum":0,"maximum":9},
        "ok":{"type":"boolean"}},
        "required":["answer","score","ok"]})";
    auto compiled = compiler.compile(spec);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    int completed = 0;
    for (const float temperature : {0.0f, 0.7f, 1.5f}) {
        for (uint64_t seed = 1; seed <= 4; ++seed) {
            SCOPED_TRACE("temperature " + std::to_string(temperature) + " seed " + std::to_string(seed));
            const auto [text, stopped] = sample_constrained(*tok, compiled.value(), temperature, seed, 200, 64);
            if (!stopped) continue;  // random logits may take long: what was produced is checked as it went
            ++completed;
            const json j = json::parse(text, nullptr, false);
            ASSERT_TRUE(j.is_object()) << text;
            ASSERT_TRUE(j.contains("answer") && j.contains("score") && j.contains("ok")) << text;
            EXPECT_TRUE(j["answer"] == "yes" || j["answer"] == "no" || j["answer"] == "maybe") << text;
            ASSERT_TRUE(j["score"].is_number_integer()) << text;
            EXPECT_GE(j["score"].get<int>(), 0);
            EXPECT_LE(j["score"].get<int>(), 9);
            EXPECT_TRUE(j["ok"].is_boolean()) << text;
            EXPECT_EQ(j.size(), 3u) << text;  // strict: nothing the schema does not name
        }
    }
    EXPECT_GE(completed, 6);
    // The same text is compiled once.
    auto again = compiler.compile(spec);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.value().get(), compiled.value().get());
    EXPECT_EQ(compiler.stats().compiles, 1);
    EXPECT_EQ(compiler.stats().cache_hits, 1);
}

// Draft-4 tuple validation (llama-server's suite sends {"items": [{"type": "integer"}]}) reaches
// the engine as prefixItems; data that merely looks like a schema is not touched.
TEST(StructuredOutputSchema, Draft4TuplesBecomePrefixItems) {
    EXPECT_EQ(grammar::with_prefix_items(json::parse(R"({"items": [{"type": "integer"}]})")),
              json::parse(R"({"prefixItems": [{"type": "integer"}]})"));
    EXPECT_EQ(
        grammar::with_prefix_items(json::parse(
            R"({"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false})")),
        json::parse(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})"));
    // Nested, and inside properties; a list-valued `items` in const/enum data stays.
    EXPECT_EQ(
        grammar::with_prefix_items(json::parse(
            R"({"properties": {"p": {"items": [{"const": {"items": [1]}}], "additionalItems": {"type": "null"}}},
                      "enum": [{"items": [2]}]})")),
        json::parse(R"({"properties": {"p": {"prefixItems": [{"const": {"items": [1]}}], "items": {"type": "null"}}},
                              "enum": [{"items": [2]}]})"));
    // Already in 2020-12's words, or an object `items`: unchanged.
    for (const char* same : {R"({"items": {"type": "integer"}})", R"({"prefixItems": [true], "items": false})"}) {
        EXPECT_EQ(grammar::with_prefix_items(json::parse(same)), json::parse(same)) << same;
    }
}

TEST_F(StructuredOutputMask, Draft4TupleSchemaCompilesAndHoldsItsItems) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model";
    auto tok = smollm2_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::ConstraintCompiler compiler(*tok);
    ConstraintSpec spec;
    spec.kind = ConstraintKind::kJsonSchema;
    spec.text =
        R"({"type": "array", "items": [{"type": "integer", "minimum": 0, "maximum": 99}, {"type": "boolean"}]})";
    auto compiled = compiler.compile(spec);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    int completed = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        const auto [text, stopped] = sample_constrained(*tok, compiled.value(), 0.7f, seed, 200, 64);
        if (!stopped) continue;
        ++completed;
        const json j = json::parse(text, nullptr, false);
        ASSERT_TRUE(j.is_array()) << text;
        ASSERT_EQ(j.size(), 2u) << text;  // strict: the two items the tuple names, no more
        ASSERT_TRUE(j[0].is_number_integer()) << text;
        EXPECT_LE(j[0].get<int>(), 99) << text;
        EXPECT_TRUE(j[1].is_boolean()) << text;
    }
    EXPECT_GE(completed, 3);
}

TEST_F(StructuredOutputMask, ChoiceAndRegexOverTheEmbeddedVocabulary) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model";
    auto tok = smollm2_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::ConstraintCompiler compiler(*tok);
    ConstraintSpec choice;
    choice.kind = ConstraintKind::kChoice;
    choice.choices = {"red", "green \"quoted\"", "blue\\back"};
    auto c = compiler.compile(choice);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    ConstraintSpec regex;
    regex.kind = ConstraintKind::kRegex;
    regex.text = "[0-9]{3}-[a-z]{2}";
    auto r = compiler.compile(regex);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        const float temperature = seed % 2 ? 1.0f : 0.0f;
        const auto [ctext, cstop] = sample_constrained(*tok, c.value(), temperature, seed, 50);
        EXPECT_TRUE(cstop);
        EXPECT_TRUE(ctext == choice.choices[0] || ctext == choice.choices[1] || ctext == choice.choices[2]) << ctext;
        const auto [rtext, rstop] = sample_constrained(*tok, r.value(), temperature, seed, 50);
        EXPECT_TRUE(rstop);
        EXPECT_TRUE(std::regex_match(rtext, std::regex("[0-9]{3}-[a-z]{2}"))) << rtext;
    }
}

TEST_F(StructuredOutputMask, GbnfOverASentencePieceByteFallbackVocabulary) {
    auto tok = spm_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::ConstraintCompiler compiler(*tok);
    ConstraintSpec spec;
    spec.kind = ConstraintKind::kGrammar;
    spec.text = "root ::= (\"ab\" | \"c\")+ \"!\"";  // "!" exists only as a byte token
    auto compiled = compiler.compile(spec);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    int completed = 0;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
        const auto [text, stopped] = sample_constrained(*tok, compiled.value(), seed % 2 ? 1.0f : 0.0f, seed, 400);
        if (!stopped) continue;
        ++completed;
        EXPECT_TRUE(std::regex_match(text, std::regex("(ab|c)+!"))) << text;
    }
    EXPECT_GE(completed, 4);
}

// A compile past the time limit is refused at the limit; while two such compiles still run on
// their own threads, further compiles are refused as busy rather than piled on the same cores.
TEST_F(StructuredOutputMask, ACompilePastTheTimeLimitIsRefusedAndCounted) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model";
    auto tok = smollm2_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::CompileLimits limits;
    limits.timeout_ms = 0;  // every compile of the embedded vocabulary takes longer
    grammar::ConstraintCompiler compiler(*tok, limits);
    auto schema = [](int i) {
        ConstraintSpec s;
        s.kind = ConstraintKind::kJsonSchema;
        s.text = R"({"type":"object","properties":{"f)" + std::to_string(i) +
                 R"(":{"type":"string"},"n":{"type":"integer"}},"required":["n"]})";
        return s;
    };
    for (int i = 0; i < 2; ++i) {
        auto r = compiler.compile(schema(i));
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(r.status().message().find("did not compile within 0 ms"), std::string::npos) << r.status().message();
    }
    auto busy = compiler.compile(schema(2));
    ASSERT_FALSE(busy.ok());
    EXPECT_EQ(busy.status().code(), StatusCode::kUnavailable) << busy.status().message();
    // The runaway compiles finish on their own and stop counting.
    EXPECT_EQ(compiler.stats().runaway, 2);
    for (int i = 0; i < 600 && compiler.stats().runaway > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(compiler.stats().runaway, 0);
    EXPECT_EQ(compiler.stats().cached, 0u);  // nothing past the limit is cached
}

TEST_F(StructuredOutputMask, BadAndHostileConstraintsAreRefusedWithAReason) {
    auto tok = spm_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::CompileLimits limits;
    limits.max_text_bytes = 4096;
    grammar::ConstraintCompiler compiler(*tok, limits);
    auto refused = [&](ConstraintKind kind, const std::string& text, const std::string& reason) {
        ConstraintSpec s;
        s.kind = kind;
        s.text = text;
        auto r = compiler.compile(s);
        ASSERT_FALSE(r.ok()) << text;
        EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(r.status().message().find(reason), std::string::npos) << r.status().message();
    };
    refused(ConstraintKind::kGrammar, "root ::= undefined_rule", "undefined_rule");
    refused(ConstraintKind::kGrammar, "root ::= \"a", "");
    refused(ConstraintKind::kJsonSchema, "{\"type\": \"object\"", "not valid JSON");
    refused(ConstraintKind::kJsonSchema, "[1, 2]", "JSON object");
    refused(ConstraintKind::kRegex, "([a-z]", "");
    refused(ConstraintKind::kGrammar, std::string(5000, 'a'), "at most 4096");
    refused(ConstraintKind::kJsonSchema, std::string(100, '[') + std::string(100, ']'), "levels deep");
    std::string nested = "{\"type\":\"object\",\"properties\":{\"a\":";
    std::string deep;
    for (int i = 0; i < 80; ++i) deep += nested;
    deep += "{}";
    for (int i = 0; i < 80; ++i) deep += "}}";
    refused(ConstraintKind::kJsonSchema, deep, "levels deep");
    refused(ConstraintKind::kRegex, "a{1000000}", "repetition");
    refused(ConstraintKind::kJsonSchema, R"({"type":"array","minItems":99999999})", "repetition");
    ConstraintSpec empty_choice;
    empty_choice.kind = ConstraintKind::kChoice;
    EXPECT_FALSE(compiler.compile(empty_choice).ok());
}

}  // namespace
}  // namespace lazyattn
