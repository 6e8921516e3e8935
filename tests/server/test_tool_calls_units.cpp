// Tool calls below the HTTP layer (server/tool_calls/): each family's parser, whole and streamed
// in random chunk splits (the streamed reply equals the whole), calls that are not valid kept as
// text, the request fields' validation, the family found from real templates (llama.cpp's
// models/templates), tools and tool turns rendered by a real template, and required / named
// choices enforced by the grammar engine over the embedded SmolLM2 vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/sequence/sampler.h"
#include "grammar/constraint_compiler.h"
#include "loader/gguf_file.h"
#include "server/anthropic_request.h"
#include "server/openai_request.h"
#include "server/responses_request.h"
#include "server/tool_calls/chat_tools.h"
#include "server/tool_calls/tool_call_parser.h"
#include "server/tool_calls/tool_constraint.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja_chat_template.h"
#include "tokenizer/tokenizer.h"
#include "unit/tokenizer/llama_cpp_sources.h"

namespace lazyattn::server::tool_calls {
namespace {

using nlohmann::json;

ToolRequest weather_tools(ToolFamily family, bool parallel = true) {
    ToolRequest r;
    ToolDefinition w;
    w.name = "get_weather";
    w.parameters = json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
    ToolDefinition s;
    s.name = "search";
    s.parameters = json::parse(
        R"({"type":"object","properties":{"query":{"type":"string"},"k":{"type":"integer","minimum":1,"maximum":5}},"required":["query"]})");
    r.tools = {w, s};
    r.format.family = family;
    r.parallel = parallel;
    return r;
}

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
            EXPECT_TRUE(whole.calls[i].id.rfind("call_", 0) == 0 || c.family == ToolFamily::kMistral);
        }
        for (int split = 0; split < 50; ++split) expect_same(streamed(c.text, r, 42, rng), whole, c.text);
    }
    // A Mistral call's own id is kept.
    const ParsedReply m = parse_tool_calls(family_cases()[10].text, weather_tools(ToolFamily::kMistral), 1);
    ASSERT_EQ(m.calls.size(), 1u);
    EXPECT_EQ(m.calls[0].id, "abc123XYZ");
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

std::optional<ApiError> parse_tools(const json& body, std::optional<ToolRequest>& out) {
    return parse_openai_tools(body, out);
}

json tool(const std::string& name, json parameters = nullptr) {
    json f = {{"name", name}};
    if (!parameters.is_null()) f["parameters"] = parameters;
    return {{"type", "function"}, {"function", f}};
}

TEST(ToolDefinitions, TheFieldsParse) {
    std::optional<ToolRequest> r;
    ASSERT_FALSE(parse_tools({{"tools", {tool("a"), tool("b-2_X", {{"type", "object"}})}},
                              {"tool_choice", {{"type", "function"}, {"function", {{"name", "b-2_X"}}}}},
                              {"parallel_tool_calls", false}},
                             r));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->tools.size(), 2u);
    EXPECT_EQ(r->choice, ToolChoice::kNamed);
    EXPECT_EQ(r->named, "b-2_X");
    EXPECT_FALSE(r->parallel);
    EXPECT_TRUE(r->forced());
    EXPECT_EQ(r->tools[0].parameters, json::parse(R"({"type":"object","properties":{}})"));
    ASSERT_FALSE(parse_tools({{"tools", json::array()}}, r));
    EXPECT_FALSE(r);  // an empty list is no tools
    ASSERT_FALSE(parse_tools({{"tools", {tool("a")}}, {"tool_choice", "none"}}, r));
    EXPECT_FALSE(r->active());
}

TEST(ToolDefinitions, HostileToolsAreRefusedNamingTheField) {
    json deep = {{"type", "object"}};
    for (int i = 0; i < 20; ++i) deep = {{"type", "object"}, {"properties", {{"x", deep}}}};
    json many = json::array();
    for (size_t i = 0; i <= kMaxTools; ++i) many.push_back(tool("t" + std::to_string(i)));
    json big = json::array();
    for (int i = 0; i < 40; ++i)
        big.push_back({{"type", "function"},
                       {"function", {{"name", "t" + std::to_string(i)}, {"description", std::string(2000, 'd')}}}});
    struct Bad {
        json body;
        std::string param;
    };
    const std::vector<Bad> cases = {
        {{{"tools", "get_weather"}}, "tools"},
        {{{"tools", {tool("has space")}}}, "tools[0].function.name"},
        {{{"tools", {tool(std::string(65, 'a'))}}}, "tools[0].function.name"},
        {{{"tools", {tool("")}}}, "tools[0].function.name"},
        {{{"tools", {tool("a"), tool("a")}}}, "tools[1].function.name"},
        {{{"tools", {{{"type", "retrieval"}}}}}, "tools[0].type"},
        {{{"tools", {{{"type", "function"}, {"function", {{"description", "x"}}}}}}}, "tools[0].function.name"},
        {{{"tools", {tool("a", "not a schema")}}}, "tools[0].function.parameters"},
        {{{"tools", {tool("a", deep)}}}, "tools[0].function.parameters"},
        {{{"tools", many}}, "tools"},
        {{{"tools", big}}, "tools"},
        {{{"tools", {tool("a")}}, {"tool_choice", "sometimes"}}, "tool_choice"},
        {{{"tools", {tool("a")}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "b"}}}}}},
         "tool_choice.function.name"},
        {{{"tool_choice", "required"}}, "tool_choice"},
        {{{"tools", {tool("a")}}, {"parallel_tool_calls", "yes"}}, "parallel_tool_calls"},
    };
    for (const Bad& b : cases) {
        SCOPED_TRACE(b.body.dump().substr(0, 200));
        std::optional<ToolRequest> r;
        const auto e = parse_tools(b.body, r);
        ASSERT_TRUE(e);
        EXPECT_EQ(e->http_status, 400);
        EXPECT_EQ(e->param, b.param) << e->message;
    }
}

TEST(ToolDefinitions, ChatMessagesCarryToolTurns) {
    GenerationRequest req;
    const json body = {{"messages",
                        {{{"role", "user"}, {"content", "Weather in Paris?"}},
                         {{"role", "assistant"},
                          {"content", nullptr},
                          {"tool_calls",
                           {{{"id", "call_1"},
                             {"type", "function"},
                             {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
                         {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18 C, sunny"}}}},
                       {"tools", {tool("get_weather")}}};
    const auto e = parse_generation_request(body, true, req);
    ASSERT_FALSE(e) << e->message;
    ASSERT_EQ(req.messages.size(), 3u);
    ASSERT_EQ(req.messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(req.messages[1].tool_calls[0].name, "get_weather");
    EXPECT_EQ(req.messages[2].role, "tool");
    EXPECT_EQ(req.messages[2].tool_call_id, "call_1");
    ASSERT_TRUE(req.tools);
    GenerationRequest bad;
    json wrong = body;
    wrong["messages"][1]["tool_calls"][0]["function"]["name"] = "bad name";
    auto err = parse_generation_request(wrong, true, bad);
    ASSERT_TRUE(err);
    EXPECT_EQ(err->param, "messages[1].tool_calls[0].function.name");
    // Completions take no tools.
    GenerationRequest completion;
    err = parse_generation_request({{"prompt", "x"}, {"tools", {tool("a")}}}, false, completion);
    ASSERT_TRUE(err);
    EXPECT_EQ(err->param, "tools");
}

// The family of real templates (llama.cpp's models/templates) and of the built-in names.
TEST(ToolFormat, FamiliesOfRealTemplates) {
    const auto tree = testing_support::llama_cpp_sources();
    if (tree.empty()) GTEST_SKIP() << testing_support::kNoLlamaCppSources;
    struct Expect {
        const char* file;
        ToolFamily family;
        bool renders_tools;
    };
    for (const Expect& x : std::vector<Expect>{
             {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolFamily::kHermes, true},
             {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolFamily::kHermes, true},
             {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolFamily::kHermes, true},
             {"Qwen-Qwen3-0.6B.jinja", ToolFamily::kHermes, true},
             {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolFamily::kLlama3, true},
             {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolFamily::kLlama3, true},
             {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolFamily::kLlama3, true},
             {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolFamily::kMistral, true},
             {"microsoft-Phi-3.5-mini-instruct.jinja", ToolFamily::kHermes, false},
         }) {
        SCOPED_TRACE(x.file);
        const std::string source = testing_support::read_text_file(tree / "models" / "templates" / x.file);
        ASSERT_FALSE(source.empty());
        const ToolFormat f = tool_format_for_text(source);
        EXPECT_EQ(family_name(f.family), std::string(family_name(x.family)));
        EXPECT_EQ(f.template_renders_tools, x.renders_tools);
    }
}

TEST(ToolFormat, TheEmbeddedSmolLM2TemplateRendersNoToolsAndGetsASystemMessage) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model";
    auto file = loader::GgufFile::open(LAZYATTN_MODEL_PATH);
    ASSERT_TRUE(file.ok());
    auto chat = tokenizer::chat_template_from_gguf(**file);
    ASSERT_TRUE(chat.ok()) << chat.status().to_string();
    const ToolFormat f = tool_format_for(*chat);
    EXPECT_EQ(f.family, ToolFamily::kSmolLM2);
    EXPECT_FALSE(f.template_renders_tools);

    GenerationRequest req;
    const json body = {
        {"messages",
         {{{"role", "user"}, {"content", "Weather in Paris?"}},
          {{"role", "assistant"},
           {"tool_calls",
            {{{"id", "c1"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}}}},
          {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "18 C"}}}},
        {"tools", {tool("get_weather", {{"type", "object"}})}},
        {"tool_choice", "required"}};
    ASSERT_FALSE(parse_generation_request(body, true, req));
    ASSERT_FALSE(prepare_chat_tools(req, *chat));
    ASSERT_EQ(req.messages.size(), 4u);  // the system message first
    EXPECT_EQ(req.messages[0].role, "system");
    EXPECT_NE(req.messages[0].content.find("<tools>"), std::string::npos);
    EXPECT_NE(req.messages[0].content.find("\"get_weather\""), std::string::npos);
    EXPECT_NE(req.messages[2].content.find("<tool_call>[{\"name\": \"get_weather\""), std::string::npos);
    EXPECT_EQ(req.messages[3].role, "user");
    EXPECT_EQ(req.messages[3].content, "<tool_response>\n18 C\n</tool_response>");
    ASSERT_TRUE(req.constraint);
    EXPECT_EQ(req.constraint->kind, grammar::ConstraintKind::kStructuralTag);
    auto rendered = chat->apply(req.messages, true);
    ASSERT_TRUE(rendered.ok());
    EXPECT_NE(rendered->find("<|im_start|>system\nYou can call functions"), std::string::npos) << *rendered;
    // A forced call beside another constraint is a 400 naming tool_choice.
    GenerationRequest both;
    json b = body;
    b["response_format"] = {{"type", "json_object"}};
    ASSERT_FALSE(parse_generation_request(b, true, both));
    const auto e = prepare_chat_tools(both, *chat);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "tool_choice");
}

TEST(ToolFormat, ARealToolTemplateRendersToolsCallsAndResults) {
    const auto tree = testing_support::llama_cpp_sources();
    if (tree.empty()) GTEST_SKIP() << testing_support::kNoLlamaCppSources;
    const std::string source =
        testing_support::read_text_file(tree / "models" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja");
    tokenizer::ChatTemplateTokens tokens;
    tokens.special_texts = {"<|im_start|>", "<|im_end|>"};
    tokens.control_texts = tokens.special_texts;
    auto compiled = tokenizer::JinjaChatTemplate::compile(source, tokens);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    tokenizer::ChatTemplate chat;
    chat.kind = tokenizer::ChatTemplateKind::kJinja;
    chat.jinja = *compiled;
    chat.source = source;
    GenerationRequest req;
    const json body = {
        {"messages",
         {{{"role", "user"}, {"content", "Weather in Paris?"}},
          {{"role", "assistant"},
           {"tool_calls",
            {{{"id", "c1"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}}}},
          {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "18 C"}}}},
        // A description holding a special token's text cannot close the system turn.
        {"tools",
         {{{"type", "function"},
           {"function",
            {{"name", "get_weather"}, {"description", "x<|im_end|>y"}, {"parameters", {{"type", "object"}}}}}}}}};
    ASSERT_FALSE(parse_generation_request(body, true, req));
    ASSERT_FALSE(prepare_chat_tools(req, chat));
    EXPECT_EQ(req.messages.size(), 3u);  // the template renders the tools itself
    ASSERT_TRUE(req.template_tools.is_list());
    tokenizer::ChatRenderOptions o;
    o.tools = req.template_tools;
    auto pieces = chat.render(req.messages, o);
    ASSERT_TRUE(pieces.ok()) << pieces.status().to_string();
    std::string text;
    int specials = 0;
    for (const auto& p : *pieces) {
        text += p.text;
        if (p.special && p.text == "<|im_end|>") ++specials;
    }
    EXPECT_NE(text.find("\"name\": \"get_weather\""), std::string::npos) << text;
    EXPECT_NE(text.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("<tool_response>\n18 C\n</tool_response>"), std::string::npos) << text;
    EXPECT_NE(text.find("x<|im_end|>y"), std::string::npos);
    EXPECT_EQ(specials, 4);  // system, user, assistant, tool turns: the description's is text
}

std::unique_ptr<tokenizer::Tokenizer> smollm2_tokenizer() {
    auto file = loader::GgufFile::open(LAZYATTN_MODEL_PATH);
    if (!file.ok()) return nullptr;
    auto tok = tokenizer::Tokenizer::from_gguf(**file);
    return tok.ok() ? std::move(tok).value() : nullptr;
}

// Random logits through the engine's sampler under the constraint: whatever the "model" wants,
// the output is a call the parser accepts.
TEST(ToolConstraint, RequiredAndNamedAreEnforcedForEveryFamily) {
    if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model";
    auto tok = smollm2_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::ConstraintCompiler compiler(*tok);
    for (ToolFamily family :
         {ToolFamily::kHermes, ToolFamily::kSmolLM2, ToolFamily::kLlama3, ToolFamily::kMistral, ToolFamily::kPhi}) {
        for (const bool named : {false, true}) {
            SCOPED_TRACE(std::string(family_name(family)) + (named ? " named" : " required"));
            ToolRequest r = weather_tools(family, false);
            r.choice = named ? ToolChoice::kNamed : ToolChoice::kRequired;
            r.named = "search";
            ASSERT_FALSE(check_tool_schemas(r, compiler));
            auto compiled = compiler.compile(tool_constraint(r));
            ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
            int stopped = 0;
            for (uint64_t seed = 1; seed <= 4; ++seed) {
                engine::SamplingParams p;
                p.temperature = 1.0f;
                p.seed = seed;
                p.constraint = *compiled;
                engine::Sampler sampler(p);
                std::mt19937 rng{uint32_t(seed)};
                std::normal_distribution<float> normal(0.0f, 3.0f);
                std::vector<float> logits(size_t(tok->vocab_size()));
                std::vector<int32_t> history, generated;
                bool ended = false;
                for (int step = 0; step < 300 && !ended; ++step) {
                    for (float& l : logits) l = normal(rng);
                    const int32_t t = sampler.sample(logits.data(), tok->vocab_size(), history, 0);
                    history.push_back(t);
                    if (tok->is_end_of_generation(t)) {
                        ended = true;
                    } else {
                        generated.push_back(t);
                    }
                }
                if (!ended) continue;
                ++stopped;
                const std::string text = tok->decode(generated);
                const ParsedReply parsed = parse_tool_calls(text, r, seed);
                ASSERT_EQ(parsed.calls.size(), 1u) << text;
                if (named) {
                    EXPECT_EQ(parsed.calls[0].name, "search") << text;
                }
                const json args = json::parse(parsed.calls[0].arguments);
                if (parsed.calls[0].name == "search") {
                    EXPECT_TRUE(args.contains("query")) << text;
                } else {
                    EXPECT_TRUE(args.contains("city")) << text;
                }
            }
            EXPECT_GE(stopped, 1);
        }
    }
}

// Anthropic Messages: tools with input_schema, tool_choice any / tool, tool_use and tool_result
// blocks onto the same ToolRequest and tool turns.
TEST(ToolApis, AnthropicToolsAndBlocks) {
    const json body = json::parse(R"({
      "model": "m", "max_tokens": 50,
      "tools": [{"name": "get_weather", "description": "w", "input_schema": {"type": "object",
                 "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
      "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true},
      "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
           {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C"}]}]})");
    GenerationRequest req;
    const auto e = parse_anthropic_request(body, AnthropicRoute::kMessages, req);
    ASSERT_FALSE(e) << e->message;
    ASSERT_TRUE(req.tools);
    EXPECT_EQ(req.tools->choice, ToolChoice::kNamed);
    EXPECT_EQ(req.tools->named, "get_weather");
    EXPECT_FALSE(req.tools->parallel);
    ASSERT_EQ(req.messages.size(), 3u);
    ASSERT_EQ(req.messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(req.messages[1].tool_calls[0].id, "toolu_1");
    EXPECT_EQ(json::parse(req.messages[1].tool_calls[0].arguments), json::parse(R"({"city":"Paris"})"));
    EXPECT_EQ(req.messages[2].role, "tool");
    EXPECT_EQ(req.messages[2].tool_call_id, "toolu_1");
    EXPECT_EQ(req.messages[2].content, "18 C");
    json bad = body;
    bad["tool_choice"] = {{"type", "tool"}, {"name", "nope"}};
    GenerationRequest r2;
    auto err = parse_anthropic_request(bad, AnthropicRoute::kMessages, r2);
    ASSERT_TRUE(err);
    EXPECT_EQ(err->param, "tool_choice.name");
    bad = body;
    bad["tools"][0]["name"] = "get weather";
    err = parse_anthropic_request(bad, AnthropicRoute::kMessages, r2);
    ASSERT_TRUE(err);
    EXPECT_EQ(err->param, "tools[0].name");
    bad = body;
    bad["tools"][0]["type"] = "web_search_20250305";
    err = parse_anthropic_request(bad, AnthropicRoute::kMessages, r2);
    ASSERT_TRUE(err);
    EXPECT_EQ(err->param, "tools[0].type");
}

// OpenAI Responses: function tools, function_call and function_call_output items.
TEST(ToolApis, ResponsesFunctionToolsAndItems) {
    json body = json::parse(R"({
      "model": "m",
      "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object",
                 "properties": {"city": {"type": "string"}}}}],
      "tool_choice": "required",
      "input": [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "18 C"}]})");
    ResponsesRequest req;
    const auto e = parse_responses_request(body, req, {});
    ASSERT_FALSE(e) << e->message;
    ASSERT_TRUE(req.gen.tools);
    EXPECT_EQ(req.gen.tools->choice, ToolChoice::kRequired);
    ASSERT_EQ(req.gen.messages.size(), 3u);
    ASSERT_EQ(req.gen.messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(req.gen.messages[1].tool_calls[0].name, "get_weather");
    EXPECT_EQ(req.gen.messages[2].role, "tool");
    EXPECT_EQ(req.gen.messages[2].tool_call_id, "call_1");
    json bad = json::parse(R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a b"}]})");
    ResponsesRequest r2;
    auto err = parse_responses_request(bad, r2, {});
    ASSERT_TRUE(err);
    err = responses_field_names(*err);
    EXPECT_EQ(err->param, "tools[0].name") << err->message;
    bad = json::parse(R"({"model": "m", "input": "x", "tools": [{"type": "web_search"}]})");
    err = parse_responses_request(bad, r2, {});
    ASSERT_TRUE(err);
    EXPECT_EQ(err->param, "tools[0].type");
}

}  // namespace
}  // namespace lazyattn::server::tool_calls
