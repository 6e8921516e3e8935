// Tool calls over a real socket with the embedded SmolLM2 (docs/api.md "Tool calls"): required and
// named choices give valid OpenAI tool_calls (whole and streamed as delta.tool_calls), auto and
// none answer, a tool loop sends its passages back as documents and the next turn hits them in
// the cache, another family's template (llama3) gets its own call format, and bad tools are a 400
// naming the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "grammar/constraint_compiler.h"
#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "search_passages", "description": "Search the library for passages",
    "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 60}},
                   "required": ["query"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30}},
                   "required": ["city"], "additionalProperties": false}}}
])");

class ServerTools : public ::testing::Test {
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
    static json body(const json& extra, const std::string& question = "Find passages about the capital of Peru.") {
        json b = {{"messages", {{{"role", "user"}, {"content", question}}}},
                  {"tools", kTools},
                  {"max_tokens", 80},
                  {"temperature", 0}};
        b.update(extra);
        return b;
    }
    static json chat(const json& b, const ServerProcess* s = nullptr) {
        const auto r = curl("POST", (s ? s : server_)->url("/v1/chat/completions"), b.dump());
        EXPECT_EQ(r.status, 200) << r.body;
        return parse_or_null(r.body);
    }
    static ServerProcess* server_;
};
ServerProcess* ServerTools::server_ = nullptr;

void expect_valid_call(const json& call, const std::string& name = "") {
    ASSERT_TRUE(call.is_object()) << call;
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call;
    const std::string n = call["function"]["name"];
    EXPECT_TRUE(n == "search_passages" || n == "get_weather") << call;
    if (!name.empty()) {
        EXPECT_EQ(n, name);
    }
    ASSERT_TRUE(call["function"]["arguments"].is_string()) << call;
    const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(args.is_object()) << call;
    EXPECT_TRUE(args.contains(n == "get_weather" ? "city" : "query")) << call;
}

TEST_F(ServerTools, RequiredAndNamedGiveValidToolCalls) {
    for (const double temperature : {0.0, 0.9}) {
        const json r = chat(body({{"tool_choice", "required"}, {"temperature", temperature}, {"seed", 3}}));
        const json& msg = r["choices"][0]["message"];
        EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls") << r;
        EXPECT_TRUE(msg["content"].is_null()) << r;
        ASSERT_TRUE(msg["tool_calls"].is_array() && !msg["tool_calls"].empty()) << r;
        for (const json& c : msg["tool_calls"]) expect_valid_call(c);
    }
    const json named = chat(body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                                  {"parallel_tool_calls", false}},
                                 "What is the weather in Lima?"));
    const json& calls = named["choices"][0]["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 1u) << named;
    expect_valid_call(calls[0], "get_weather");
}

TEST_F(ServerTools, StreamedCallsAreDeltasWithNoMarkupInContent) {
    json b = body({{"tool_choice", "required"}, {"parallel_tool_calls", false}, {"seed", 5}});
    const json whole = chat(b);
    b["stream"] = true;
    const auto r = curl("POST", server_->url("/v1/chat/completions"), b.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    std::string content, finish;
    json calls = json::array();
    for (const std::string& p : sse_payloads(r.body)) {
        if (p == "[DONE]") continue;
        const json c = parse_or_null(p);
        if (!c.contains("choices") || c["choices"].empty()) continue;
        const json& ch = c["choices"][0];
        if (ch["delta"].contains("content") && ch["delta"]["content"].is_string()) content += ch["delta"]["content"];
        if (ch["delta"].contains("tool_calls")) {
            for (const json& d : ch["delta"]["tool_calls"]) {
                const size_t i = d["index"];
                if (i == calls.size()) {  // the first delta names the call
                    ASSERT_TRUE(d.contains("id") && d["function"].contains("name")) << d;
                    calls.push_back({{"id", d["id"]},
                                     {"type", d["type"]},
                                     {"function", {{"name", d["function"]["name"]}, {"arguments", ""}}}});
                }
                ASSERT_LT(i, calls.size());
                calls[i]["function"]["arguments"] = calls[i]["function"]["arguments"].get<std::string>() +
                                                    d["function"]["arguments"].get<std::string>();
            }
        }
        if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
    }
    EXPECT_EQ(finish, "tool_calls") << r.body;
    EXPECT_EQ(content, "") << r.body;
    ASSERT_EQ(calls.size(), 1u) << r.body;
    expect_valid_call(calls[0]);
    // The same seeded request whole: the same call (ids are drawn per response).
    const json& w = whole["choices"][0]["message"]["tool_calls"][0];
    EXPECT_EQ(calls[0]["function"], w["function"]) << r.body;
}

TEST_F(ServerTools, AutoAndNoneAnswer) {
    for (const char* choice : {"auto", "none"}) {
        SCOPED_TRACE(choice);
        const json r = chat(body({{"tool_choice", choice}}, "Say hello."));
        const json& msg = r["choices"][0]["message"];
        ASSERT_TRUE(msg.is_object()) << r;
        const bool called = msg.contains("tool_calls");
        if (std::string(choice) == "none") {
            EXPECT_FALSE(called) << r;
            EXPECT_TRUE(msg["content"].is_string()) << r;
            EXPECT_EQ(msg["content"].get<std::string>().find("<tool_call>"), std::string::npos) << r;
        }
        if (called) {
            for (const json& c : msg["tool_calls"]) expect_valid_call(c);
        }
    }
}

// The agent loop: the model asks for passages, the application sends them back as documents with
// the tool result; the next turn reads them from the cache.
TEST_F(ServerTools, AToolLoopSendsPassagesAsCachedDocuments) {
    const json first = chat(body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "search_passages"}}}}},
                                  {"parallel_tool_calls", false}}));
    const json call = first["choices"][0]["message"]["tool_calls"][0];
    expect_valid_call(call, "search_passages");
    const json docs = {{{"title", "Lima"}, {"text", "Lima is the capital and largest city of Peru, on the Pacific."}},
                       {{"title", "Cusco"}, {"text", "Cusco was the capital of the Inca Empire."}}};
    json next = body({{"max_tokens", 24}});
    next["messages"].push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}});
    next["messages"].push_back(
        {{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "2 passages found (sent as documents)."}});
    next["documents"] = docs;
    const json second = chat(next);
    ASSERT_TRUE(second["choices"][0]["message"].is_object()) << second;
    EXPECT_GT(second["usage"]["prompt_tokens_details"]["document_tokens"].get<int>(), 0) << second;
    // The loop goes on: the same passages are served from the cache.
    const json third = chat(next);
    EXPECT_GE(third["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
              second["usage"]["prompt_tokens_details"]["document_tokens"].get<int>())
        << third;
}

TEST_F(ServerTools, BadToolsAreA400NamingTheField) {
    struct Bad {
        json extra;
        std::string param;
    };
    json bad_schema = kTools;
    bad_schema[1]["function"]["parameters"] = {{"type", "object"},
                                               {"properties", {{"a", {{"type", "string"}, {"pattern", "(("}}}}}};
    json bad_name = kTools;
    bad_name[0]["function"]["name"] = "search passages";
    const std::vector<Bad> cases = {
        {{{"tools", bad_name}}, "tools[0].function.name"},
        {{{"tools", bad_schema}}, "tools[1].function.parameters"},
        {{{"tool_choice", {{"type", "function"}, {"function", {{"name", "delete_everything"}}}}}},
         "tool_choice.function.name"},
        {{{"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}}, "tool_choice"},
        {{{"tools", "search"}}, "tools"},
    };
    for (const Bad& b : cases) {
        SCOPED_TRACE(b.param);
        const auto r = curl("POST", server_->url("/v1/chat/completions"), body(b.extra).dump());
        expect_api_error(r, 400);
        EXPECT_EQ(parse_or_null(r.body)["error"]["param"], b.param) << r.body;
    }
    expect_still_serving(*server_);
}

// Responses' agent loop: response 1 asks for a call; request 2 sends previous_response_id and a
// function_call_output. The kept response carries the call, so the model sees the call and its
// output: the prompt is the one the whole conversation sent as items gives, token for token.
TEST_F(ServerTools, ResponsesContinueAfterAFunctionCall) {
    json tools = json::array();
    for (const json& t : kTools) {
        tools.push_back({{"type", "function"},
                         {"name", t["function"]["name"]},
                         {"description", t["function"]["description"]},
                         {"parameters", t["function"]["parameters"]}});
    }
    const std::string question = "Find passages about the capital of Peru.";
    const json base = {{"model", "any"}, {"instructions", "Use the tools."}, {"tools", tools}, {"temperature", 0}};
    json first = base;
    first.update(
        {{"input", question}, {"tool_choice", "required"}, {"parallel_tool_calls", false}, {"max_output_tokens", 80}});
    const auto r1 = curl("POST", server_->url("/v1/responses"), first.dump());
    ASSERT_EQ(r1.status, 200) << r1.body;
    const json one = parse_or_null(r1.body);
    json call;
    for (const json& item : one["output"]) {
        if (item["type"] == "function_call") call = item;
    }
    ASSERT_TRUE(call.is_object()) << one;
    const json output = {{"type", "function_call_output"},
                         {"call_id", call["call_id"]},
                         {"output", "Lima is the capital of Peru, on the Pacific coast."}};
    json next = base;
    next.update({{"tool_choice", "none"}, {"max_output_tokens", 12}});
    json continued = next;
    continued.update({{"previous_response_id", one["id"]}, {"input", json::array({output})}});
    json explicit_items = next;
    explicit_items["input"] = {{{"role", "user"}, {"content", question}},
                               {{"type", "function_call"},
                                {"call_id", call["call_id"]},
                                {"name", call["name"]},
                                {"arguments", call["arguments"]}},
                               output};
    const json two = parse_or_null(curl("POST", server_->url("/v1/responses"), continued.dump()).body);
    const json same = parse_or_null(curl("POST", server_->url("/v1/responses"), explicit_items.dump()).body);
    ASSERT_TRUE(two.contains("usage") && same.contains("usage")) << two << same;
    EXPECT_EQ(two["previous_response_id"], one["id"]);
    EXPECT_EQ(two["usage"]["input_tokens"], same["usage"]["input_tokens"]) << two << same;
    EXPECT_EQ(two["output"][0]["content"], same["output"][0]["content"]) << two << same;  // temperature 0
    // The call is in the prompt: more than the question and the output alone would take.
    json without_call = next;
    without_call["input"] = {{{"role", "user"}, {"content", question}}, output};
    const json less = parse_or_null(curl("POST", server_->url("/v1/responses"), without_call.dump()).body);
    ASSERT_TRUE(less.contains("usage")) << less;
    EXPECT_GT(two["usage"]["input_tokens"].get<int>(), less["usage"]["input_tokens"].get<int>()) << two << less;
}

// Another family: the llama3 built-in template gets Llama 3.x's JSON calls.
TEST(ServerToolsLlama3, TheTemplatesFamilyWritesTheCall) {
    if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model (run make test)";
    ServerProcess s(
        {"--model", LAZYATTN_MODEL_PATH, "--kv-cache-mb", "64", "--threads", "2", "--chat-template", "llama3"});
    ASSERT_TRUE(s.started()) << s.log();
    json b = {{"messages", {{{"role", "user"}, {"content", "Weather in Lima?"}}}},
              {"tools", kTools},
              {"tool_choice", "required"},
              {"parallel_tool_calls", false},
              {"max_tokens", 60},
              {"temperature", 0}};
    const auto r = curl("POST", s.url("/v1/chat/completions"), b.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = parse_or_null(r.body);
    ASSERT_EQ(j["choices"][0]["message"]["tool_calls"].size(), 1u) << r.body;
    expect_valid_call(j["choices"][0]["message"]["tool_calls"][0]);
}

}  // namespace
}  // namespace lazyattn::testing
