// Tool calls' parser below the HTTP layer (server/tool_calls/): each family's parser, whole and
// streamed in random chunk splits (the streamed reply equals the whole), Llama 3.1's built-in
// calls, calls that are not valid kept as text, and OpenAI's shapes. Fields, templates, grammar
// and the other APIs: test_tool_templates_units.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/sequence/request_output.h"
#include "engine/sequence/sampler.h"
#include "grammar/constraint_compiler.h"
#include "grammar/grammar_engine.h"
#include "loader/gguf_file.h"
#include "server/anthropic_request.h"
#include "server/openai_request.h"
#include "server/responses_request.h"
#include "server/tool_calls/builtin_tools.h"
#include "server/tool_calls/chat_tools.h"
#include "server/tool_calls/tool_call_parser.h"
#include "server/tool_calls/tool_constraint.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/jinja_chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tool_test_requests.h"
#include "unit/tokenizer/llama_cpp_sources.h"

namespace lazyattn::server::tool_calls {
namespace {

using nlohmann::json;

// Feeds `text` in random pieces; the concatenated content and the calls must equal the whole.
ParsedReply streamed(std::string_view text, const ToolRequest& r, uint64_t seed, std::mt19937& rng) {
    ToolCallStream s(r, seed);
    ToolCallDelta all;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t n = std::uniform_int_distribution<size_t>(1, 7)(rng);
        ToolCallDelta d = s.feed(text.substr(pos, n));
        pos += n;
        all.content += d.content;
        for (auto& c : d.calls) all.calls.push_back(c);
    }
    ToolCallDelta d = s.finish();
    all.content += d.content;
    for (auto& c : d.calls) all.calls.push_back(c);
    ParsedReply out;
    if (!all.content.empty() || all.calls.empty()) out.content = all.content;
    out.calls = all.calls;
    return out;
}

void expect_same(const ParsedReply& a, const ParsedReply& b, const std::string& text) {
    EXPECT_EQ(a.content, b.content) << text;
    ASSERT_EQ(a.calls.size(), b.calls.size()) << text;
    for (size_t i = 0; i < a.calls.size(); ++i) {
        EXPECT_EQ(a.calls[i].id, b.calls[i].id);
        EXPECT_EQ(a.calls[i].name, b.calls[i].name);
        EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments);
    }
}

struct Case {
    ToolFamily family;
    std::string text;
    std::optional<std::string> content;  // expected
    std::vector<std::pair<std::string, json>> calls;
};

std::vector<Case> family_cases() {
    const json paris = {{"city", "Paris"}};
    const json rag = {{"query", "lazy attention"}, {"k", 3}};
    return {
        {ToolFamily::kHermes,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
         std::nullopt,
         {{"get_weather", paris}}},
        {ToolFamily::kHermes,
         "Let me look.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"lazy attention\", \"k\": 3}}\n"
         "</tool_call>\n<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}"
         "</tool_call>",
         "Let me look.",
         {{"search", rag}, {"get_weather", paris}}},
        {ToolFamily::kHermes,
         "No tools needed: 2 < 3 and <tool is not a tag.",
         "No tools needed: 2 < 3 and <tool is not a tag.",
         {}},
        {ToolFamily::kSmolLM2,
         "<tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"search\", "
         "\"arguments\": {\"query\": \"lazy attention\", \"k\": 3}}]</tool_call>",
         std::nullopt,
         {{"get_weather", paris}, {"search", rag}}},
        {ToolFamily::kSmolLM2,
         "<tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
         std::nullopt,
         {{"get_weather", paris}}},  // the reply ended before the closing tag: the JSON is whole
        {ToolFamily::kLlama3,
         "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
         std::nullopt,
         {{"get_weather", paris}}},
        {ToolFamily::kLlama3,
         "  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"search\", \"parameters\": "
         "{\"query\": \"lazy attention\", \"k\": 3}}",
         std::nullopt,
         {{"get_weather", paris}, {"search", rag}}},
        {ToolFamily::kLlama3,
         "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"query\": \"lazy attention\", \"k\": 3}}",
         std::nullopt,
         {{"search", rag}}},
        {ToolFamily::kLlama3, "The set {a, b} has two members.", "The set {a, b} has two members.", {}},
        {ToolFamily::kLlama3, "{\"answer\": 42}", "{\"answer\": 42}", {}},  // JSON, not a call
        {ToolFamily::kMistral,
         "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123XYZ\"}]",
         std::nullopt,
         {{"get_weather", paris}}},
        {ToolFamily::kMistral,
         "Sure. [TOOL_CALLS] [{\"name\": \"search\", \"arguments\": {\"query\": \"lazy attention\", \"k\": 3}}]",
         "Sure.",
         {{"search", rag}}},
        {ToolFamily::kMistralArgs,
         "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
         std::nullopt,
         {{"get_weather", paris}}},
        {ToolFamily::kMistralArgs,
         "Checking.[TOOL_CALLS]search[CALL_ID]a1b2c3d4e[ARGS]{\"query\": \"lazy attention\", \"k\": 3}"
         "[TOOL_CALLS]get_weather[CALL_ID]000000002[ARGS] {\"city\": \"Paris\"}",
         "Checking.",
         {{"search", rag}, {"get_weather", paris}}},
        {ToolFamily::kMistralArgs,
         "[TOOL_CALLS] are written [TOOL_CALLS]name[ARGS]{...}; see [TOOL_CALLS]get_weather[ARGS]x",
         "[TOOL_CALLS] are written [TOOL_CALLS]name[ARGS]{...}; see [TOOL_CALLS]get_weather[ARGS]x",
         {}},  // markers that open no valid call stay text
        {ToolFamily::kMistralArgs,
         "[TOOL_CALLS] get_weather [CALL_ID] 000000003 [ARGS] {\"city\": \"Paris\"}",  // spaced out
         std::nullopt,
         {{"get_weather", paris}}},
        {ToolFamily::kMistralArgs,
         "[TOOL_CALLS]rm_rf[ARGS]{}",  // not offered
         "[TOOL_CALLS]rm_rf[ARGS]{}",
         {}},
        {ToolFamily::kMistralArgs,
         "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Par",  // cut off
         "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Par",
         {}},
        {ToolFamily::kPhi,
         "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]<|/tool_call|>",
         std::nullopt,
         {{"get_weather", paris}}},
        {ToolFamily::kPhi,
         "Done. <|tool_call|>{\"name\": \"search\", \"arguments\": {\"query\": \"lazy attention\", \"k\": "
         "3}}<|/tool_call|> Bye.",
         "Done.Bye.",
         {{"search", rag}}},
    };
}

TEST(ToolCallParser, EachFamilyWholeAndStreamedInRandomSplits) {
    std::mt19937 rng(7);
    for (const Case& c : family_cases()) {
        SCOPED_TRACE(std::string(family_name(c.family)) + ": " + c.text);
        const ToolRequest r = weather_tools(c.family);
        const ParsedReply whole = parse_tool_calls(c.text, r, 42);
        EXPECT_EQ(whole.content, c.content);
        ASSERT_EQ(whole.calls.size(), c.calls.size());
        for (size_t i = 0; i < c.calls.size(); ++i) {
            EXPECT_EQ(whole.calls[i].name, c.calls[i].first);
            EXPECT_EQ(json::parse(whole.calls[i].arguments), c.calls[i].second);
            if (syntax_of(c.family).short_ids) {
                EXPECT_EQ(whole.calls[i].id.size(), 9u) << whole.calls[i].id;  // Mistral's templates ask for 9
            } else {
                EXPECT_EQ(whole.calls[i].id.rfind("call_", 0), 0u) << whole.calls[i].id;
            }
        }
        for (int split = 0; split < 50; ++split) expect_same(streamed(c.text, r, 42, rng), whole, c.text);
    }
    // A Mistral call's own id is kept.
    const ParsedReply m = parse_tool_calls(family_cases()[10].text, weather_tools(ToolFamily::kMistral), 1);
    ASSERT_EQ(m.calls.size(), 1u);
    EXPECT_EQ(m.calls[0].id, "abc123XYZ");
    // ... and a [CALL_ID]'s.
    const ParsedReply ids = parse_tool_calls(family_cases()[13].text, weather_tools(ToolFamily::kMistralArgs), 1);
    ASSERT_EQ(ids.calls.size(), 2u);
    EXPECT_EQ(ids.calls[0].id, "a1b2c3d4e");
    EXPECT_EQ(ids.calls[1].id, "000000002");
}

// Llama 3.1's built-in tools after <|python_tag|>, as llama-server maps them: name.call(...) to
// the offered function of that name, raw code to the offered python (or code_interpreter).
TEST(ToolCallParser, Llama31BuiltinToolsWholeAndStreamed) {
    const ToolRequest r = builtin_tools_request({"brave_search", "wolfram_alpha", "python"});
    struct Builtin {
        std::string text;
        std::optional<std::string> content;
        std::vector<std::pair<std::string, json>> calls;
    };
    const std::vector<Builtin> cases = {
        {"<|python_tag|>brave_search.call(query=\"lazy attention\")",
         std::nullopt,
         {{"brave_search", {{"query", "lazy attention"}}}}},
        {"<|python_tag|>wolfram_alpha.call(query='what is \\'2+2\\'', n=3, exact=True, unit=None, "
         "tags=[\"a\", \"b\"],)",
         std::nullopt,
         {{"wolfram_alpha",
           {{"query", "what is '2+2'"}, {"n", 3}, {"exact", true}, {"unit", nullptr}, {"tags", {"a", "b"}}}}}},
        {"<|python_tag|>brave_search.call(query=\"a (b) \\\"c\\\", d\")",
         std::nullopt,
         {{"brave_search", {{"query", "a (b) \"c\", d"}}}}},
        {"<|python_tag|>import math\nprint(math.pi)\n",
         std::nullopt,
         {{"python", {{"code", "import math\nprint(math.pi)"}}}}},
        {"<|python_tag|>{\"name\": \"brave_search\", \"parameters\": {\"query\": \"x\"}}",
         std::nullopt,
         {{"brave_search", {{"query", "x"}}}}},
        // A built-in the request did not offer, and a call cut off: text.
        {"<|python_tag|>photo_search.call(query=\"x\")",
         std::nullopt,
         {{"python", {{"code", "photo_search.call(query=\"x\")"}}}}},
        {"Sure.", "Sure.", {}},
    };
    std::mt19937 rng(11);
    for (const Builtin& c : cases) {
        SCOPED_TRACE(c.text);
        const ParsedReply whole = parse_tool_calls(c.text, r, 9);
        EXPECT_EQ(whole.content, c.content);
        ASSERT_EQ(whole.calls.size(), c.calls.size());
        for (size_t i = 0; i < c.calls.size(); ++i) {
            EXPECT_EQ(whole.calls[i].name, c.calls[i].first);
            EXPECT_EQ(json::parse(whole.calls[i].arguments), c.calls[i].second);
        }
        for (int split = 0; split < 30; ++split) expect_same(streamed(c.text, r, 9, rng), whole, c.text);
    }
    // Without a code tool, what is not a call of an offered built-in stays text.
    const ToolRequest search_only = builtin_tools_request({"brave_search", "code_interpreter"});
    EXPECT_EQ(parse_tool_calls("<|python_tag|>print(1)", search_only, 1).calls[0].name, "code_interpreter");
    const ToolRequest none = builtin_tools_request({"brave_search"});
    for (const std::string text :
         {"<|python_tag|>print(1)", "<|python_tag|>wolfram_alpha.call(query=\"x\")",
          "<|python_tag|>brave_search.call(query=\"x\"", "<|python_tag|>brave_search.call(q=x)"}) {
        SCOPED_TRACE(text);
        const ParsedReply p = parse_tool_calls(text, none, 1);
        EXPECT_TRUE(p.calls.empty());
        EXPECT_EQ(p.content, text);
        expect_same(streamed(text, none, 1, rng), p, text);
    }
    EXPECT_EQ(template_builtin_tools(builtin_tools_request({"web_search", "python", "get_weather"})),
              (std::vector<std::string>{"brave_search", "code_interpreter"}));
}

TEST(ToolCallParser, CallsThatAreNotValidStayText) {
    const ToolRequest r = weather_tools(ToolFamily::kHermes);
    std::mt19937 rng(3);
    for (const std::string& text : std::vector<std::string>{
             "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>",                 // not offered
             "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": }</tool_call>",  // bad JSON
             "<tool_call>{\"name\": \"get_weather\", \"arguments\": [1, 2]}</tool_call>",       // not an object
             "<tool_call>{\"name\": \"get_weather\", \"arguments\": \"not json\"}</tool_call>",
             "<tool_call>{\"arguments\": {}}</tool_call>",                                    // no name
             "<tool_call>" + std::string(100, '[') + std::string(100, ']') + "</tool_call>",  // too deep
             "<tool_call>{\"name\": \"get_weather\"",                                         // cut off
         }) {
        SCOPED_TRACE(text);
        const ParsedReply whole = parse_tool_calls(text, r, 1);
        EXPECT_TRUE(whole.calls.empty());
        ASSERT_TRUE(whole.content.has_value());
        EXPECT_EQ(*whole.content, text);
        for (int split = 0; split < 20; ++split) expect_same(streamed(text, r, 1, rng), whole, text);
    }
    // parallel_tool_calls false: the second call is text.
    const ToolRequest one = weather_tools(ToolFamily::kHermes, false);
    const std::string two =
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\n"
        "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}</tool_call>";
    const ParsedReply p = parse_tool_calls(two, one, 1);
    ASSERT_EQ(p.calls.size(), 1u);
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(p.content, "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}</tool_call>");
}

TEST(ToolCallParser, NoMarkupLeaksIntoStreamedContent) {
    const ToolRequest r = weather_tools(ToolFamily::kHermes);
    const std::string text =
        "Checking the weather. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
        "</tool_call>";
    // One byte at a time: no delta ever carries a piece of the marker.
    ToolCallStream s(r, 5);
    std::string content;
    for (char ch : text) {
        const ToolCallDelta d = s.feed(std::string(1, ch));
        EXPECT_EQ(d.content.find('<'), std::string::npos) << d.content;
        content += d.content;
    }
    content += s.finish().content;
    EXPECT_EQ(content, "Checking the weather.");
    EXPECT_EQ(s.num_calls(), 1u);
}

TEST(ToolCallParser, OpenAiShapes) {
    ToolCall c{"call_1", "search", "{\"query\":\"x\"}"};
    const json list = openai_tool_calls({c});
    EXPECT_EQ(
        list,
        json::parse(
            R"([{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"query\":\"x\"}"}}])"));
    const auto deltas = openai_tool_call_deltas(c, 2);
    ASSERT_EQ(deltas.size(), 2u);
    EXPECT_EQ(deltas[0]["index"], 2);
    EXPECT_EQ(deltas[0]["function"]["name"], "search");
    EXPECT_EQ(deltas[0]["function"]["arguments"], "");
    EXPECT_FALSE(deltas[1].contains("id"));
    EXPECT_EQ(deltas[1]["function"]["arguments"], c.arguments);
}

}  // namespace
}  // namespace lazyattn::server::tool_calls
