// Structured output over a real socket with the embedded SmolLM2 (docs/api.md "Structured
// output"): every peer's spelling constrains what the model writes (JSON object, JSON schema with
// required fields and an enum, choices, GBNF, regex), with documents, streamed, at temperature 0
// and above; a constraint that does not compile is a 400 naming its field.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "grammar/constraint_compiler.h"
#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

class ServerStructuredOutput : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (!grammar::engine_available() || !std::filesystem::exists(LAZYATTN_MODEL_PATH)) return;
        server_ = new ServerProcess({"--model", LAZYATTN_MODEL_PATH, "--kv-cache-mb", "64", "--threads", "2"});
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
        if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model (run make test)";
        ASSERT_TRUE(server_->started()) << server_->log();
    }

    static json chat(const json& extra, const std::string& question = "Describe the city of Lima.",
                     int max_tokens = 120) {
        json body = {
            {"messages", {{{"role", "user"}, {"content", question}}}}, {"max_tokens", max_tokens}, {"temperature", 0}};
        body.update(extra);
        const auto r = curl("POST", server_->url("/v1/chat/completions"), body.dump());
        EXPECT_EQ(r.status, 200) << r.body;
        return parse_or_null(r.body);
    }
    static std::string content(const json& reply) {
        EXPECT_TRUE(reply.contains("choices")) << reply;
        if (!reply.contains("choices")) return "";
        return reply["choices"][0]["message"]["content"].get<std::string>();
    }

    static ServerProcess* server_;
};
ServerProcess* ServerStructuredOutput::server_ = nullptr;

const json kDocs = {
    {{"title", "Lima"}, {"text", "Lima is the capital and largest city of Peru, on the Pacific coast."}},
    {{"title", "Nairobi"}, {"text", "Nairobi is the capital and largest city of Kenya."}}};

TEST_F(ServerStructuredOutput, JsonObjectIsParseableJson) {
    for (const double temperature : {0.0, 0.8}) {
        const json r = chat({{"response_format", {{"type", "json_object"}}}, {"temperature", temperature}, {"seed", 7}},
                            "Give the capital of Peru as JSON.", 200);
        const std::string text = content(r);
        if (r["choices"][0]["finish_reason"] != "stop") continue;  // length: cut, not claimed valid
        const json j = json::parse(text, nullptr, false);
        EXPECT_TRUE(j.is_object()) << text;
    }
}

TEST_F(ServerStructuredOutput, JsonSchemaWithRequiredFieldsAndAnEnumValidates) {
    const json schema = {{"type", "object"},
                         {"properties",
                          {{"city", {{"type", "string"}, {"maxLength", 30}}},
                           {"country", {{"type", "string"}, {"enum", {"Peru", "Kenya", "France"}}}},
                           {"capital", {{"type", "boolean"}}},
                           {"population_millions", {{"type", "integer"}, {"minimum", 0}, {"maximum", 100}}}}},
                         {"required", {"city", "country", "capital", "population_millions"}},
                         {"additionalProperties", false}};
    int stopped = 0;
    for (const double temperature : {0.0, 0.7, 1.0}) {
        for (const bool with_docs : {false, true}) {
            SCOPED_TRACE("temperature " + std::to_string(temperature) + (with_docs ? " with documents" : ""));
            json extra = {
                {"response_format",
                 {{"type", "json_schema"}, {"json_schema", {{"name", "city"}, {"schema", schema}, {"strict", true}}}}},
                {"temperature", temperature},
                {"seed", 11}};
            if (with_docs) extra["documents"] = kDocs;
            const json r = chat(extra, "Describe Lima as JSON.", 160);
            const std::string text = content(r);
            if (r["choices"][0]["finish_reason"] != "stop") continue;
            ++stopped;
            const json j = json::parse(text, nullptr, false);
            ASSERT_TRUE(j.is_object()) << text;
            EXPECT_EQ(j.size(), 4u) << text;
            ASSERT_TRUE(j["city"].is_string()) << text;
            EXPECT_LE(j["city"].get<std::string>().size(), 30u * 4) << text;
            EXPECT_TRUE(j["country"] == "Peru" || j["country"] == "Kenya" || j["country"] == "France") << text;
            EXPECT_TRUE(j["capital"].is_boolean()) << text;
            ASSERT_TRUE(j["population_millions"].is_number_integer()) << text;
            EXPECT_GE(j["population_millions"].get<int>(), 0) << text;
            EXPECT_LE(j["population_millions"].get<int>(), 100) << text;
        }
    }
    EXPECT_GE(stopped, 4);
}

TEST_F(ServerStructuredOutput, GuidedChoiceGivesOneOfTheChoices) {
    const std::set<std::string> choices = {"positive", "negative", "neutral"};
    for (const double temperature : {0.0, 1.0}) {
        for (const char* spelling : {"guided_choice", "structured_outputs"}) {
            json extra = {{"temperature", temperature}, {"seed", 3}};
            const json list = json(std::vector<std::string>(choices.begin(), choices.end()));
            if (std::string(spelling) == "guided_choice") {
                extra["guided_choice"] = list;
            } else {
                extra["structured_outputs"] = {{"choice", list}};
            }
            const json r = chat(extra, "Classify the sentiment: I love this city!", 10);
            EXPECT_EQ(choices.count(content(r)), 1u) << r;
            EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r;
        }
    }
}

TEST_F(ServerStructuredOutput, GbnfGrammarAndRegexAreFollowed) {
    const std::string gbnf = R"(root ::= "Answer: " ("yes" | "no") ", because " [a-z ]{1,40} ".")";
    for (const double temperature : {0.0, 0.9}) {
        const json g = chat({{"grammar", gbnf}, {"temperature", temperature}, {"seed", 5}}, "Is Lima in Peru?", 80);
        if (g["choices"][0]["finish_reason"] == "stop") {
            EXPECT_TRUE(std::regex_match(content(g), std::regex("Answer: (yes|no), because [a-z ]{1,40}\\.")))
                << content(g);
        }
        const json re = chat({{"guided_regex", "[A-Z][a-z]+, [A-Z][a-z]+"}, {"temperature", temperature}, {"seed", 5}},
                             "Name a city and its country.", 40);
        if (re["choices"][0]["finish_reason"] == "stop") {
            EXPECT_TRUE(std::regex_match(content(re), std::regex("[A-Z][a-z]+, [A-Z][a-z]+"))) << content(re);
        }
    }
    // The native /completion route and /v1/completions read the same fields.
    const auto native = curl("POST", server_->url("/completion"),
                             json({{"prompt", "The capital of Peru is"},
                                   {"n_predict", 10},
                                   {"temperature", 0},
                                   {"grammar", R"(root ::= " Lima" | " Cusco")"}})
                                 .dump());
    ASSERT_EQ(native.status, 200) << native.body;
    const std::string said = parse_or_null(native.body)["content"].get<std::string>();
    EXPECT_TRUE(said == " Lima" || said == " Cusco") << native.body;
    const auto completion = curl("POST", server_->url("/v1/completions"),
                                 json({{"prompt", "Answer yes or no: is Lima in Peru?"},
                                       {"max_tokens", 5},
                                       {"temperature", 0},
                                       {"guided_choice", {"yes", "no"}}})
                                     .dump());
    ASSERT_EQ(completion.status, 200) << completion.body;
    const std::string answer = parse_or_null(completion.body)["choices"][0]["text"].get<std::string>();
    EXPECT_TRUE(answer == "yes" || answer == "no") << completion.body;
}

// Streamed under a constraint: the deltas join into the same valid document.
TEST_F(ServerStructuredOutput, StreamingUnderAConstraint) {
    const json schema = {{"type", "object"},
                         {"properties", {{"answer", {{"type", "string"}, {"enum", {"Lima", "Nairobi"}}}}}},
                         {"required", {"answer"}}};
    json body = {{"messages", {{{"role", "user"}, {"content", "What is the capital of Peru?"}}}},
                 {"documents", kDocs},
                 {"max_tokens", 40},
                 {"temperature", 0},
                 {"stream", true},
                 {"guided_json", schema}};
    const auto r = curl("POST", server_->url("/v1/chat/completions"), body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    std::string text, finish;
    for (const std::string& p : sse_payloads(r.body)) {
        if (p == "[DONE]") continue;
        const json c = parse_or_null(p);
        if (!c.contains("choices") || c["choices"].empty()) continue;
        const json& ch = c["choices"][0];
        if (ch["delta"].contains("content") && ch["delta"]["content"].is_string()) text += ch["delta"]["content"];
        if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
    }
    EXPECT_EQ(finish, "stop") << r.body;
    const json j = json::parse(text, nullptr, false);
    ASSERT_TRUE(j.is_object()) << text;
    EXPECT_TRUE(j["answer"] == "Lima" || j["answer"] == "Nairobi") << text;
}

// Anthropic's structured outputs (output_config.format; the beta output_format, streamed) go
// through the same compiler: the text block is a document valid against the schema, the stream's
// text deltas join into one; a schema that does not compile is a 400 in Anthropic's shape naming
// the field the client wrote.
TEST_F(ServerStructuredOutput, AnthropicOutputFormatConstrainsTheMessage) {
    const json schema = {{"type", "object"},
                         {"properties", {{"answer", {{"type", "string"}, {"enum", {"Lima", "Nairobi"}}}}}},
                         {"required", {"answer"}},
                         {"additionalProperties", false}};
    const json format = {{"type", "json_schema"}, {"schema", schema}};
    const std::vector<std::string> headers = {"-H 'anthropic-version: 2023-06-01'",
                                              "-H 'anthropic-beta: structured-outputs-2025-11-13'"};
    json body = {{"model", "claude-test"},
                 {"max_tokens", 40},
                 {"temperature", 0},
                 {"messages", {{{"role", "user"}, {"content", "What is the capital of Peru?"}}}},
                 {"output_config", {{"format", format}}}};
    const auto whole = curl("POST", server_->url("/v1/messages"), body.dump(), headers);
    ASSERT_EQ(whole.status, 200) << whole.body;
    const json m = parse_or_null(whole.body);
    EXPECT_EQ(m["stop_reason"], "end_turn") << m;
    const json doc = json::parse(m["content"][0]["text"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(doc.is_object()) << m;
    EXPECT_EQ(doc.size(), 1u) << doc;
    EXPECT_TRUE(doc["answer"] == "Lima" || doc["answer"] == "Nairobi") << doc;

    body.erase("output_config");
    body["output_format"] = format;
    body["stream"] = true;
    const auto streamed = curl("POST", server_->url("/v1/messages"), body.dump(), headers);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    std::string text, stop;
    for (const std::string& p : sse_payloads(streamed.body)) {
        const json e = parse_or_null(p);
        if (e["type"] == "content_block_delta" && e["delta"]["type"] == "text_delta") text += e["delta"]["text"];
        if (e["type"] == "message_delta") stop = e["delta"]["stop_reason"];
    }
    EXPECT_EQ(stop, "end_turn") << streamed.body;
    EXPECT_EQ(json::parse(text, nullptr, false), doc) << text;  // temperature 0: the same document

    body.erase("stream");
    body["output_format"]["schema"] = {{"type", "no-such-type"}};
    const auto bad = curl("POST", server_->url("/v1/messages"), body.dump(), headers);
    EXPECT_EQ(bad.status, 400) << bad.body;
    const json e = parse_or_null(bad.body);
    EXPECT_EQ(e["type"], "error") << bad.body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error") << bad.body;
    EXPECT_NE(e["error"]["message"].get<std::string>().find("'output_format.schema' is not a valid"), std::string::npos)
        << bad.body;
    expect_still_serving(*server_);
}

// A constraint the model cannot finish within max_tokens ends with length, never stop.
TEST_F(ServerStructuredOutput, AnUnfinishedDocumentEndsWithLength) {
    const json r = chat({{"response_format", {{"type", "json_object"}}}}, "Describe Lima in detail as JSON.", 3);
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length") << r;
}

TEST_F(ServerStructuredOutput, ConstraintsThatDoNotCompileAreA400NamingTheField) {
    const std::vector<std::pair<json, std::string>> bad = {
        {{{"grammar", "root ::= missing_rule"}}, "grammar"},
        {{{"guided_regex", "([a-z]"}}, "guided_regex"},
        {{{"response_format",
           {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "no-such-type"}}}}}}}},
         "response_format.json_schema.schema"},
        {{{"guided_json", "{\"type\": "}}, "guided_json"},
        {{{"json_schema", {{"type", "array"}, {"minItems", 100000000}}}}, "json_schema"},
        {{{"grammar", std::string(200 * 1024, 'x')}}, "grammar"},
        {{{"grammar", "root ::= \"a\""}, {"guided_choice", {"a"}}}, "guided_choice"},
    };
    for (const auto& [extra, field] : bad) {
        SCOPED_TRACE(field);
        json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}};
        body.update(extra);
        const auto r = curl("POST", server_->url("/v1/chat/completions"), body.dump());
        expect_api_error(r, 400);
        EXPECT_EQ(parse_or_null(r.body)["error"]["param"], field) << r.body;
    }
    expect_still_serving(*server_);
}

}  // namespace
}  // namespace lazyattn::testing
