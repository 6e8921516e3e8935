// Tool calls' request side below the HTTP layer (server/tool_calls/): the request fields'
// validation, the family found from real templates (llama.cpp's models/templates), tools and
// tool turns rendered by a real template, control-token markers reaching the parser, required /
// named choices enforced by the grammar engine over the embedded SmolLM2 vocabulary (and what its
// first compile costs), and the Anthropic and Responses spellings. The parser's own tests:
// test_tool_calls_units.cpp.
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

std::optional<ApiError> parse_tools(const json& body, std::optional<ToolRequest>& out) {
    return parse_openai_tools(body, out);
}

// A user question, the assistant's get_weather call and the tool's result: the conversation the
// template tests render.
json weather_call_and_its_result() {
    return {{{"role", "user"}, {"content", "Weather in Paris?"}},
            {{"role", "assistant"},
             {"tool_calls",
              {{{"id", "c1"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}}}},
            {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "18 C"}}};
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
             {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolFamily::kMistralArgs, true},
             {"unsloth-mistral-Devstral-Small-2507.jinja", ToolFamily::kMistralArgs, true},
             {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", ToolFamily::kMistralArgs, true},
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
    const json body = {{"messages", weather_call_and_its_result()},
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
        {"messages", weather_call_and_its_result()},
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

// Llama 3.1's own template is told of the offered built-in tools (its builtin_tools variable) and
// announces them; a tool it does not know as built-in is rendered as a function only.
TEST(ToolFormat, Llama31TemplateAnnouncesTheOfferedBuiltinTools) {
    const auto tree = testing_support::llama_cpp_sources();
    if (tree.empty()) GTEST_SKIP() << testing_support::kNoLlamaCppSources;
    const std::string source =
        testing_support::read_text_file(tree / "models" / "templates" / "meta-llama-Llama-3.1-8B-Instruct.jinja");
    tokenizer::ChatTemplateTokens tokens;
    tokens.special_texts = {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                            "<|eot_id|>",        "<|python_tag|>",      "<|eom_id|>"};
    tokens.control_texts = tokens.special_texts;
    tokens.bos_token = "<|begin_of_text|>";
    auto compiled = tokenizer::JinjaChatTemplate::compile(source, tokens);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    tokenizer::ChatTemplate chat;
    chat.kind = tokenizer::ChatTemplateKind::kJinja;
    chat.jinja = *compiled;
    chat.source = source;
    auto render = [&](const json& tools) {
        GenerationRequest req;
        const json body = {{"messages", {{{"role", "user"}, {"content", "What is new in lazy attention?"}}}},
                           {"tools", tools}};
        const auto parsed = parse_generation_request(body, true, req);
        EXPECT_FALSE(parsed) << parsed->message;
        const auto prepared = prepare_chat_tools(req, chat);
        EXPECT_FALSE(prepared) << prepared->message;
        EXPECT_EQ(req.tools->format.family, ToolFamily::kLlama3);
        tokenizer::ChatRenderOptions o;
        o.tools = req.template_tools;
        o.kwargs = req.chat_template_kwargs;
        auto pieces = chat.render(req.messages, o);
        EXPECT_TRUE(pieces.ok()) << pieces.status().to_string();
        std::string text;
        if (pieces.ok()) {
            for (const auto& p : *pieces) text += p.text;
        }
        return text;
    };
    const std::string with =
        render(json::array({tool("brave_search", {{"type", "object"}}), tool("python", {{"type", "object"}}),
                            tool("get_weather", {{"type", "object"}})}));
    EXPECT_NE(with.find("Environment: ipython\nTools: brave_search\n"), std::string::npos) << with;
    const std::string without = render(json::array({tool("get_weather", {{"type", "object"}})}));
    EXPECT_EQ(without.find("Tools: "), std::string::npos) << without;
}

std::unique_ptr<tokenizer::Tokenizer> smollm2_tokenizer() {
    auto file = loader::GgufFile::open(LAZYATTN_MODEL_PATH);
    if (!file.ok()) return nullptr;
    auto tok = tokenizer::Tokenizer::from_gguf(**file);
    return tok.ok() ? std::move(tok).value() : nullptr;
}

// Markers that are control tokens: the request's output decoder drops a control token's text
// unless the request shows it, and then the parser would read a call as plain text. Token ids as
// a model samples them go through the engine's RequestOutput (what the OutputProcessor streams)
// into the parser. The vocabularies are llama.cpp's vocab-only GGUFs as Llama 3.1 and Mistral
// change them: llama-bpe (Llama 3.0) with 3.1's renamed reserved tokens (128008 <|eom_id|>,
// 128010 <|python_tag|>, control tokens), and llama-spm (SentencePiece, Mistral's family) with
// [TOOL_CALLS], [ARGS] and [CALL_ID] added as control tokens (Mistral's own vocabulary is not
// among them).
std::unique_ptr<tokenizer::Tokenizer> vocabulary_with_markers(const std::filesystem::path& gguf,
                                                              const std::vector<std::pair<int, std::string>>& renamed,
                                                              const std::vector<std::string>& added) {
    auto file = loader::GgufFile::open(gguf.string());
    if (!file.ok()) return nullptr;
    auto data = tokenizer::read_vocab_data(**file);
    if (!data.ok()) return nullptr;
    for (const auto& [id, text] : renamed) data->tokens[size_t(id)] = text;
    data->add_space_prefix = false;  // the reply's text as written, no space before each piece
    for (const std::string& text : added) {
        data->tokens.push_back(text);
        if (!data->token_types.empty()) data->token_types.push_back(3);  // CONTROL
        if (!data->scores.empty()) data->scores.push_back(0.0);
    }
    auto tok = tokenizer::Tokenizer::from_vocab(*data);
    return tok.ok() ? std::move(tok).value() : nullptr;
}

struct MarkerCase {
    const char* name;
    std::unique_ptr<tokenizer::Tokenizer> tok;
    ToolRequest request;
    std::string reply;
    std::vector<std::string> markers;  // control tokens in the reply
    std::string content;               // expected
    std::string call;                  // expected name
    json arguments;
    std::string lost;  // the content when the markers are dropped
};

ToolCallDelta through_output(const tokenizer::Tokenizer& tok, const std::vector<int32_t>& ids, const ToolRequest& r,
                             std::shared_ptr<const std::vector<int32_t>> show) {
    engine::RequestOutput out(tok, engine::StopMatcher(std::vector<std::string>{}), std::move(show));
    ToolCallStream stream(r, 3);
    ToolCallDelta all;
    auto add = [&](ToolCallDelta d) {
        all.content += d.content;
        for (auto& c : d.calls) all.calls.push_back(c);
    };
    for (int32_t id : ids) add(stream.feed(out.decoder.push(id)));
    add(stream.feed(out.decoder.flush()));
    add(stream.finish());
    return all;
}

TEST(ToolCallMarkers, ControlTokenMarkersReachTheParserAndNotTheContent) {
    const auto tree = testing_support::llama_cpp_sources();
    if (tree.empty()) GTEST_SKIP() << testing_support::kNoLlamaCppSources;
    std::vector<MarkerCase> cases;
    cases.push_back({"llama 3.1",
                     vocabulary_with_markers(tree / "models" / "ggml-vocab-llama-bpe.gguf",
                                             {{128008, "<|eom_id|>"}, {128010, "<|python_tag|>"}}, {}),
                     builtin_tools_request({"brave_search"}),
                     "Looking.<|python_tag|>brave_search.call(query=\"lazy attention\")",
                     {"<|python_tag|>"},
                     "Looking.",
                     "brave_search",
                     {{"query", "lazy attention"}},
                     "Looking.brave_search.call(query=\"lazy attention\")"});
    cases.push_back({"mistral",
                     vocabulary_with_markers(tree / "models" / "ggml-vocab-llama-spm.gguf", {},
                                             {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"}),
                     weather_tools(ToolFamily::kMistralArgs),
                     "Sure.[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Paris\"}",
                     {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"},
                     "Sure.",
                     "get_weather",
                     {{"city", "Paris"}},
                     "Sure.get_weathera1b2c3d4e{\"city\": \"Paris\"}"});
    for (MarkerCase& c : cases) {
        SCOPED_TRACE(c.name);
        ASSERT_NE(c.tok, nullptr);
        const tokenizer::Tokenizer& tok = *c.tok;
        std::vector<int32_t> marker_ids;
        for (const std::string& m : c.markers) {
            const auto id = tok.find_token(m);
            ASSERT_TRUE(id) << m;
            ASSERT_EQ(tok.token_to_piece(*id, false), "") << m;  // a control token: dropped by default
            marker_ids.push_back(*id);
        }
        std::sort(marker_ids.begin(), marker_ids.end());
        const auto shown = control_markers(c.request.format.family, tok);
        ASSERT_NE(shown, nullptr);
        EXPECT_EQ(*shown, marker_ids);
        EXPECT_EQ(control_markers(ToolFamily::kHermes, tok), nullptr);  // <tool_call> is text here

        const std::vector<int32_t> ids = tok.encode(c.reply, false, true);
        for (int32_t m : marker_ids) ASSERT_NE(std::find(ids.begin(), ids.end(), m), ids.end());  // one token each
        const ToolCallDelta with = through_output(tok, ids, c.request, shown);
        EXPECT_EQ(with.content, c.content);  // the markers never reach the content
        ASSERT_EQ(with.calls.size(), 1u);
        EXPECT_EQ(with.calls[0].name, c.call);
        EXPECT_EQ(json::parse(with.calls[0].arguments), c.arguments);
        // Without them (the decoder as it was), the call is lost into the content.
        const ToolCallDelta without = through_output(tok, ids, c.request, nullptr);
        EXPECT_TRUE(without.calls.empty());
        EXPECT_EQ(without.content, c.lost);
    }
    // Other control tokens stay hidden.
    auto llama =
        vocabulary_with_markers(tree / "models" / "ggml-vocab-llama-bpe.gguf", {{128010, "<|python_tag|>"}}, {});
    ASSERT_NE(llama, nullptr);
    engine::RequestOutput out(*llama, engine::StopMatcher(std::vector<std::string>{}),
                              control_markers(ToolFamily::kLlama3, *llama));
    EXPECT_EQ(out.decoder.push(*llama->find_token("<|start_header_id|>")), "");
}

// Random logits through the engine's sampler under the constraint: whatever the "model" wants,
// the output is a call the parser accepts.
TEST(ToolConstraint, RequiredAndNamedAreEnforcedForEveryFamily) {
    if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model";
    auto tok = smollm2_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::ConstraintCompiler compiler(*tok);
    for (ToolFamily family : {ToolFamily::kHermes, ToolFamily::kSmolLM2, ToolFamily::kLlama3, ToolFamily::kMistral,
                              ToolFamily::kMistralArgs, ToolFamily::kPhi}) {
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

namespace lazyattn::server::tool_calls {
namespace {

// bench/tool_calls.py's four tools: the shape of a RAG agent's list.
ToolRequest four_tools() {
    const json tools = json::parse(R"([
      {"type": "function", "function": {"name": "search_passages", "parameters": {"type": "object", "properties": {
         "query": {"type": "string", "maxLength": 80}, "k": {"type": "integer", "minimum": 1, "maximum": 10}},
         "required": ["query"]}}},
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
         "city": {"type": "string", "maxLength": 40}, "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
      {"type": "function", "function": {"name": "convert_currency", "parameters": {"type": "object", "properties": {
         "amount": {"type": "number", "minimum": 0}, "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
         "to": {"type": "string", "pattern": "^[A-Z]{3}$"}}, "required": ["amount", "from", "to"]}}},
      {"type": "function", "function": {"name": "lookup_author", "parameters": {"type": "object", "properties": {
         "title": {"type": "string", "maxLength": 80}}, "required": ["title"]}}}])");
    std::optional<ToolRequest> r;
    EXPECT_FALSE(parse_openai_tools({{"tools", tools}, {"tool_choice", "required"}}, r));
    r->format.family = ToolFamily::kSmolLM2;
    return *r;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The tools' schemas are checked without computing token masks: nothing compiled, nothing
// cached, and a schema the converter refuses is still a 400 naming its field. The forced call's
// structural tag is then the one compile, cached by its text.
TEST(ToolConstraint, SchemasAreCheckedWithoutACompileAndTheToolGrammarIsCached) {
    if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    auto tok = smollm2_tokenizer();
    ASSERT_NE(tok, nullptr);
    grammar::ConstraintCompiler compiler(*tok);
    ToolRequest r = four_tools();
    ASSERT_FALSE(check_tool_schemas(r, compiler));
    EXPECT_EQ(compiler.stats().compiles, 0);
    EXPECT_EQ(compiler.stats().cached, 0u);
    ToolRequest bad = r;
    bad.tools[2].parameters["properties"]["from"]["pattern"] = "((";
    bad.tools[2].parameters_field = "tools[2].function.parameters";
    const auto e = check_tool_schemas(bad, compiler);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "tools[2].function.parameters");
    auto first = compiler.compile(tool_constraint(r));
    ASSERT_TRUE(first.ok()) << first.status().to_string();
    auto again = compiler.compile(tool_constraint(r));  // the same tools, choice and family
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->get(), first->get());
    EXPECT_EQ(compiler.stats().compiles, 1);
    EXPECT_EQ(compiler.stats().cache_hits, 1);
    r.format.family = ToolFamily::kHermes;  // another family: another grammar
    ASSERT_TRUE(compiler.compile(tool_constraint(r)).ok());
    EXPECT_EQ(compiler.stats().compiles, 2);
}

// Where a first forced call's compile goes, before (every schema compiled alone, then the
// structural tag) and after (schemas checked, the tag compiled), side by side on fresh compilers:
//   build/tests/server/test_server_units --gtest_also_run_disabled_tests --gtest_filter='ToolConstraintProfile.*'
TEST(ToolConstraintProfile, DISABLED_WhereTheFirstForcedCompileGoes) {
    if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    auto tok = smollm2_tokenizer();
    ASSERT_NE(tok, nullptr);
    const ToolRequest r = four_tools();
    std::vector<double> engine_ms, compiled_ms, checked_ms, tag_ms, cold_before, cold_after, cached_ms;
    for (int round = 0; round < 5; ++round) {
        auto t0 = std::chrono::steady_clock::now();
        auto engine = grammar::make_grammar_engine(*tok);
        engine_ms.push_back(ms_since(t0));
        {  // before: each schema compiled with its token masks
            grammar::ConstraintCompiler compiler(*tok);
            t0 = std::chrono::steady_clock::now();
            for (const ToolDefinition& t : r.tools) {
                grammar::ConstraintSpec spec;
                spec.kind = grammar::ConstraintKind::kJsonSchema;
                spec.text = t.parameters.dump();
                ASSERT_TRUE(compiler.compile(spec).ok());
            }
            compiled_ms.push_back(ms_since(t0));
            t0 = std::chrono::steady_clock::now();
            ASSERT_TRUE(compiler.compile(tool_constraint(r)).ok());
            cold_before.push_back(compiled_ms.back() + ms_since(t0));
        }
        grammar::ConstraintCompiler compiler(*tok);  // after
        t0 = std::chrono::steady_clock::now();
        ASSERT_FALSE(check_tool_schemas(r, compiler));
        checked_ms.push_back(ms_since(t0));
        t0 = std::chrono::steady_clock::now();
        auto first = compiler.compile(tool_constraint(r));
        ASSERT_TRUE(first.ok());
        tag_ms.push_back(ms_since(t0));
        cold_after.push_back(checked_ms.back() + tag_ms.back());
        t0 = std::chrono::steady_clock::now();
        ASSERT_FALSE(check_tool_schemas(r, compiler));
        auto again = compiler.compile(tool_constraint(r));
        cached_ms.push_back(ms_since(t0));
        EXPECT_EQ(again->get(), first->get());
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::printf(
        "median of 5, four tools, SmolLM2 vocabulary: vocabulary + engine %.0f ms | before: schemas compiled %.0f ms, "
        "first forced call %.0f ms | after: schemas checked %.1f ms, structural tag %.0f ms, first forced call %.0f "
        "ms | cached (check + tag) %.2f ms\n",
        median(engine_ms), median(compiled_ms), median(cold_before), median(checked_ms), median(tag_ms),
        median(cold_after), median(cached_ms));
}

}  // namespace
}  // namespace lazyattn::server::tool_calls
