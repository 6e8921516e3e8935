// The Anthropic Messages API's pieces without sockets: the request parser (every field and block
// type, every bad input a 400 naming its field, in Anthropic's error shape) and the renderer (the
// whole message, the streaming event order, the usage and stop_reason mapping).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/request/request_handle.h"
#include "server/anthropic_renderer.h"
#include "server/anthropic_request.h"
#include "server/serving_front.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

json minimal() { return {{"model", "m"}, {"max_tokens", 16}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}; }

std::optional<ApiError> parse(const json& body, GenerationRequest* out = nullptr,
                              AnthropicRoute route = AnthropicRoute::kMessages) {
    GenerationRequest r;
    auto e = parse_anthropic_request(body, route, r);
    if (out != nullptr) *out = r;
    return e;
}

TEST(AnthropicRequest, ReadsEveryServedField) {
    json body = minimal();
    body["system"] = json::array({{{"type", "text"}, {"text", "be "}, {"cache_control", {{"type", "ephemeral"}}}},
                                  {{"type", "text"}, {"text", "brief"}}});
    body["messages"] = {
        {{"role", "user"}, {"content", "first"}},
        {{"role", "assistant"}, {"content", {{{"type", "text"}, {"text", "ok"}}}}},
        {{"role", "user"},
         {"content",
          {{{"type", "document"},
            {"source", {{"type", "text"}, {"media_type", "text/plain"}, {"data", "doc one"}}},
            {"title", "One"},
            {"context", "from the wiki. "},
            {"citations", {{"enabled", true}}},
            {"cache_control", {{"type", "ephemeral"}}}},
           {{"type", "document"},
            {"source",
             {{"type", "content"},
              {"content", {{{"type", "text"}, {"text", "part a"}}, {{"type", "text"}, {"text", "part b"}}}}}}},
           {{"type", "text"}, {"text", "question?"}}}}}};
    body["stop_sequences"] = {"END", "\n\n"};
    body["temperature"] = 0.5;
    body["top_p"] = 0.9;
    body["top_k"] = 40;
    body["stream"] = true;
    body["metadata"] = {{"user_id", "u1"}};
    body["thinking"] = {{"type", "disabled"}};
    body["tools"] = json::array();
    body["tool_choice"] = {{"type", "auto"}};
    body["seed"] = 7;
    body["cache_control"] = {{"type", "ephemeral"}};
    body["inference_geo"] = "us";
    body["speed"] = "fast";
    body["diagnostics"] = {{"previous_message_id", nullptr}};
    body["user_profile_id"] = "p";
    body["workspace_id"] = "w";
    body["cache_salt"] = "salt";
    body["documents"] = {"extension doc"};
    GenerationRequest r;
    ASSERT_FALSE(parse(body, &r)) << parse(body)->message;
    EXPECT_TRUE(r.chat);
    EXPECT_EQ(r.model, "m");
    EXPECT_EQ(r.max_tokens, 16);
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[0].content, "be brief");
    EXPECT_EQ(r.messages[1].content, "first");
    EXPECT_EQ(r.messages[2].role, "assistant");
    EXPECT_EQ(r.messages[2].content, "ok");
    // The document's context stays text of its message; the documents leave it.
    EXPECT_EQ(r.messages[3].content, "from the wiki. \nquestion?");  // blocks joined by a newline
    ASSERT_EQ(r.message_parts.size(), 4u);
    EXPECT_TRUE(r.message_parts[0].empty());
    ASSERT_EQ(r.message_parts[3].size(), 2u);
    EXPECT_EQ(r.message_parts[3][1].text, "question?");
    // The extension's documents first, then the blocks in order, titles kept.
    ASSERT_EQ(r.documents.size(), 3u);
    EXPECT_EQ(r.documents[0].text, "extension doc");
    EXPECT_EQ(r.documents[1].text, "doc one");
    EXPECT_EQ(r.documents[1].title, "One");
    EXPECT_EQ(r.documents[2].text, "part a\npart b");
    EXPECT_EQ(r.stop, (std::vector<std::string>{"END", "\n\n"}));
    EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
    EXPECT_EQ(r.sampling.top_k, 40);
    EXPECT_EQ(r.sampling.seed, 7u);
    EXPECT_TRUE(r.stream);
    EXPECT_EQ(r.cache_salt, "salt");
    EXPECT_EQ(r.n, 1);
}

TEST(AnthropicRequest, StringContentAndStringSourceContent) {
    json body = minimal();
    body["system"] = "sys";
    body["messages"][0]["content"] = {
        {{"type", "document"}, {"source", {{"type", "content"}, {"content", "whole text"}}}},
        {{"type", "text"}, {"text", "q"}}};
    GenerationRequest r;
    ASSERT_FALSE(parse(body, &r));
    ASSERT_EQ(r.documents.size(), 1u);
    EXPECT_EQ(r.documents[0].text, "whole text");
    EXPECT_EQ(r.messages[0].content, "sys");
    EXPECT_EQ(r.messages[1].content, "q");
}

TEST(AnthropicRequest, FinalAssistantMessageIsAPrefill) {
    json body = minimal();
    GenerationRequest r;
    ASSERT_FALSE(parse(body, &r));
    EXPECT_FALSE(r.continue_final_message.has_value());
    body["messages"].push_back({{"role", "assistant"}, {"content", "The answer is"}});
    ASSERT_FALSE(parse(body, &r));
    EXPECT_EQ(r.messages.back().role, "assistant");
    EXPECT_EQ(r.continue_final_message, true);
}

TEST(AnthropicRequest, CountTokensNeedsNoMaxTokens) {
    json body = minimal();
    body.erase("max_tokens");
    EXPECT_FALSE(parse(body, nullptr, AnthropicRoute::kCountTokens));
    auto e = parse(body);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "max_tokens");
}

TEST(AnthropicRequest, DocumentReuseExtensionsAreChatCompletions) {
    json body = minimal();
    body["document_reuse"] = "plain";
    body["documents_from"] = "parts";
    GenerationRequest r;
    ASSERT_FALSE(parse(body, &r));
    EXPECT_TRUE(r.document_reuse.has_value());
    ASSERT_TRUE(r.documents_source.has_value());
    EXPECT_EQ(*r.documents_source, DocumentsSource::kParts);
}

struct BadCase {
    const char* what;
    std::function<void(json&)> edit;
    std::string param;
};

TEST(AnthropicRequest, RefusesBadInputNamingTheField) {
    const std::vector<BadCase> cases = {
        {"no model", [](json& b) { b.erase("model"); }, "model"},
        {"model not a string", [](json& b) { b["model"] = 3; }, "model"},
        {"no max_tokens", [](json& b) { b.erase("max_tokens"); }, "max_tokens"},
        {"max_tokens 0", [](json& b) { b["max_tokens"] = 0; }, "max_tokens"},
        {"max_tokens text", [](json& b) { b["max_tokens"] = "9"; }, "max_tokens"},
        {"no messages", [](json& b) { b.erase("messages"); }, "messages"},
        {"messages object", [](json& b) { b["messages"] = json::object(); }, "messages"},
        {"message not object", [](json& b) { b["messages"][0] = "hi"; }, "messages[0]"},
        {"no role", [](json& b) { b["messages"][0].erase("role"); }, "messages[0].role"},
        {"system role", [](json& b) { b["messages"][0]["role"] = "system"; }, "messages[0].role"},
        {"odd role", [](json& b) { b["messages"][0]["role"] = "tool"; }, "messages[0].role"},
        {"no content", [](json& b) { b["messages"][0].erase("content"); }, "messages[0].content"},
        {"content number", [](json& b) { b["messages"][0]["content"] = 5; }, "messages[0].content"},
        {"content bad utf8", [](json& b) { b["messages"][0]["content"] = "\xff"; }, "messages[0].content"},
        {"block not object", [](json& b) { b["messages"][0]["content"] = {"x"}; }, "messages[0].content[0]"},
        {"block no type",
         [](json& b) {
             b["messages"][0]["content"] = {{{"text", "x"}}};
         },
         "messages[0].content[0].type"},
        {"text no text",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "text"}}};
         },
         "messages[0].content[0].text"},
        {"text number",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "text"}, {"text", 1}}};
         },
         "messages[0].content[0].text"},
        {"image",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "image"}, {"source", {{"type", "base64"}, {"data", "AA"}}}}};
         },
         "messages[0].content[0]"},
        {"tool_result",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "tool_result"}}};
         },
         "messages[0].content[0].tool_use_id"},
        {"tool_use",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "tool_use"}}};
         },
         "messages[0].content[0]"},
        {"thinking block",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "thinking"}}};
         },
         "messages[0].content[0]"},
        {"unknown block",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "audio"}}};
         },
         "messages[0].content[0]"},
        {"bad cache_control",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "text"}, {"text", "x"}, {"cache_control", 1}}};
         },
         "messages[0].content[0].cache_control"},
        {"document no source",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "document"}}};
         },
         "messages[0].content[0].source"},
        {"document pdf",
         [](json& b) {
             b["messages"][0]["content"] = {
                 {{"type", "document"}, {"source", {{"type", "base64"}, {"media_type", "application/pdf"}}}}};
         },
         "messages[0].content[0].source.type"},
        {"document url",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "document"}, {"source", {{"type", "url"}, {"url", "x"}}}}};
         },
         "messages[0].content[0].source.type"},
        {"document odd source",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "document"}, {"source", {{"type", "blob"}}}}};
         },
         "messages[0].content[0].source.type"},
        {"document media type",
         [](json& b) {
             b["messages"][0]["content"] = {
                 {{"type", "document"}, {"source", {{"type", "text"}, {"media_type", "text/html"}, {"data", "x"}}}}};
         },
         "messages[0].content[0].source.media_type"},
        {"document no data",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "document"}, {"source", {{"type", "text"}}}}};
         },
         "messages[0].content[0].source.data"},
        {"document empty",
         [](json& b) {
             b["messages"][0]["content"] = {{{"type", "document"}, {"source", {{"type", "text"}, {"data", ""}}}}};
         },
         "messages[0].content[0].source"},
        {"document image content",
         [](json& b) {
             b["messages"][0]["content"] = {
                 {{"type", "document"}, {"source", {{"type", "content"}, {"content", {{{"type", "image"}}}}}}}};
         },
         "messages[0].content[0].source.content[0]"},
        {"document title number",
         [](json& b) {
             b["messages"][0]["content"] = {
                 {{"type", "document"}, {"source", {{"type", "text"}, {"data", "x"}}}, {"title", 1}}};
         },
         "messages[0].content[0].title"},
        {"document bad citations",
         [](json& b) {
             b["messages"][0]["content"] = {
                 {{"type", "document"}, {"source", {{"type", "text"}, {"data", "x"}}}, {"citations", true}}};
         },
         "messages[0].content[0].citations"},
        {"document in assistant",
         [](json& b) {
             b["messages"] = {{{"role", "assistant"},
                               {"content", {{{"type", "document"}, {"source", {{"type", "text"}, {"data", "x"}}}}}}},
                              {{"role", "user"}, {"content", "q"}}};
         },
         "messages[0].content[0]"},
        {"system number", [](json& b) { b["system"] = 1; }, "system"},
        {"system document",
         [](json& b) {
             b["system"] = {{{"type", "document"}, {"source", {{"type", "text"}, {"data", "x"}}}}};
         },
         "system[0]"},
        {"system image",
         [](json& b) {
             b["system"] = {{{"type", "image"}}};
         },
         "system[0]"},
        {"temperature 1.5", [](json& b) { b["temperature"] = 1.5; }, "temperature"},
        {"temperature text", [](json& b) { b["temperature"] = "hot"; }, "temperature"},
        {"top_p 2", [](json& b) { b["top_p"] = 2; }, "top_p"},
        {"top_k -1", [](json& b) { b["top_k"] = -1; }, "top_k"},
        {"top_k float", [](json& b) { b["top_k"] = 1.5; }, "top_k"},
        {"stream text", [](json& b) { b["stream"] = "yes"; }, "stream"},
        {"stop string", [](json& b) { b["stop_sequences"] = "END"; }, "stop_sequences"},
        {"stop number", [](json& b) { b["stop_sequences"] = {1}; }, "stop_sequences"},
        {"stop empty", [](json& b) { b["stop_sequences"] = {""}; }, "stop_sequences"},
        {"stop too many", [](json& b) { b["stop_sequences"] = json(std::vector<std::string>(17, "x")); },
         "stop_sequences"},
        {"stop too long", [](json& b) { b["stop_sequences"] = {std::string(5000, 'x')}; }, "stop_sequences"},
        {"metadata list", [](json& b) { b["metadata"] = json::array(); }, "metadata"},
        {"metadata user",
         [](json& b) {
             b["metadata"] = {{"user_id", 3}};
         },
         "metadata.user_id"},
        {"tools",
         [](json& b) {
             b["tools"] = {{{"name", "f g"}, {"input_schema", json::object()}}};
         },
         "tools[0].name"},
        {"tool_choice any",
         [](json& b) {
             b["tool_choice"] = {{"type", "any"}};
         },
         "tool_choice"},
        {"thinking",
         [](json& b) {
             b["thinking"] = {{"type", "enabled"}, {"budget_tokens", 1024}};
         },
         "thinking"},
        {"mcp",
         [](json& b) {
             b["mcp_servers"] = {{{"url", "x"}}};
         },
         "mcp_servers"},
        {"container", [](json& b) { b["container"] = "c"; }, "container"},
        {"output_format without a schema",
         [](json& b) {
             b["output_format"] = {{"type", "json_schema"}};
         },
         "output_format.schema"},
        {"output_config.format without a schema",
         [](json& b) {
             b["output_config"] = {{"format", {{"type", "json_schema"}}}};
         },
         "output_config.format.schema"},
        {"output_format json_object",
         [](json& b) {
             b["output_format"] = {{"type", "json_object"}};
         },
         "output_format.type"},
        {"output_format a string", [](json& b) { b["output_format"] = "json"; }, "output_format"},
        {"output_config.format schema a string",
         [](json& b) {
             b["output_config"] = {{"format", {{"type", "json_schema"}, {"schema", "{}"}}}};
         },
         "output_config.format.schema"},
        {"both structured output spellings",
         [](json& b) {
             b["output_format"] = {{"type", "json_schema"}, {"schema", {{"type", "object"}}}};
             b["output_config"] = {{"format", {{"type", "json_schema"}, {"schema", {{"type", "object"}}}}}};
         },
         "output_config.format"},
        {"output_config.effort",
         [](json& b) {
             b["output_config"] = {{"effort", "high"}};
         },
         "output_config.effort"},
        {"tools strict not a boolean",
         [](json& b) {
             b["tools"] = {{{"name", "f"}, {"input_schema", {{"type", "object"}}}, {"strict", "yes"}}};
         },
         "tools[0].strict"},
        {"context_management", [](json& b) { b["context_management"] = json::object(); }, "context_management"},
        {"unknown field", [](json& b) { b["frobnicate"] = 1; }, "frobnicate"},
        {"openai field", [](json& b) { b["max_completion_tokens"] = 9; }, "max_completion_tokens"},
        {"cache_salt number", [](json& b) { b["cache_salt"] = 1; }, "cache_salt"},
        {"documents number", [](json& b) { b["documents"] = 1; }, "documents"},
        {"document_reuse bad", [](json& b) { b["document_reuse"] = "sideways"; }, "document_reuse"},
        {"documents_from bad", [](json& b) { b["documents_from"] = "everywhere"; }, "documents_from"},
        {"seed text", [](json& b) { b["seed"] = "x"; }, "seed"},
        {"top-level cache_control", [](json& b) { b["cache_control"] = "yes"; }, "cache_control"},
        {"speed number", [](json& b) { b["speed"] = 2; }, "speed"},
        {"diagnostics list", [](json& b) { b["diagnostics"] = json::array(); }, "diagnostics"},
    };
    for (const BadCase& c : cases) {
        json body = minimal();
        c.edit(body);
        const auto e = parse(body);
        ASSERT_TRUE(e) << c.what;
        EXPECT_EQ(e->http_status, 400) << c.what;
        EXPECT_EQ(e->param, c.param) << c.what << ": " << e->message;
        EXPECT_NE(e->message.find(c.param.substr(0, c.param.find('['))), std::string::npos)
            << c.what << ": the message names the field: " << e->message;
        // In Anthropic's shape.
        const json shaped = json::parse(anthropic_error_json(*e));
        EXPECT_EQ(shaped["type"], "error") << c.what;
        EXPECT_EQ(shaped["error"]["type"], "invalid_request_error") << c.what;
        EXPECT_EQ(shaped["error"]["message"], e->message) << c.what;
    }
    EXPECT_TRUE(parse(json::array()));
}

// Structured outputs (output_config.format, and the beta output_format) become the request's
// constraint, compiled later by the front as chat's response_format is; the field names the
// spelling the client used.
TEST(AnthropicRequest, StructuredOutputIsTheRequestsConstraint) {
    const json schema = {{"type", "object"},
                         {"properties", {{"answer", {{"type", "string"}}}}},
                         {"required", {"answer"}},
                         {"additionalProperties", false}};
    for (const char* spelling : {"output_config.format", "output_format"}) {
        json body = minimal();
        const json format = {{"type", "json_schema"}, {"schema", schema}};
        if (std::string(spelling) == "output_format") {
            body["output_format"] = format;
        } else {
            body["output_config"] = {{"format", format}};
        }
        GenerationRequest r;
        ASSERT_FALSE(parse(body, &r)) << spelling;
        ASSERT_TRUE(r.constraint) << spelling;
        EXPECT_EQ(r.constraint->kind, grammar::ConstraintKind::kJsonSchema);
        EXPECT_EQ(json::parse(r.constraint->text), schema);
        EXPECT_EQ(r.constraint->field, std::string(spelling) + ".schema");
        EXPECT_TRUE(r.constraint->strict);
    }
    GenerationRequest r;
    json body = minimal();
    body["output_config"] = {{"format", nullptr}, {"effort", nullptr}};
    ASSERT_FALSE(parse(body, &r));
    EXPECT_FALSE(r.constraint);
    body = minimal();
    body["tools"] = {{{"name", "f"}, {"input_schema", {{"type", "object"}}}, {"strict", true}}};
    EXPECT_FALSE(parse(body));
}

TEST(AnthropicRequest, ImagesAndServerToolsSayWhy) {
    json body = minimal();
    body["messages"][0]["content"] = {{{"type", "image"}}};
    EXPECT_NE(parse(body)->message.find("images are not served"), std::string::npos);
    body = minimal();
    body["tools"] = {{{"type", "web_search_20250305"}, {"name", "web_search"}}};
    EXPECT_NE(parse(body)->message.find("server tools"), std::string::npos);
}

TEST(AnthropicError, StatusesMapToAnthropicTypes) {
    EXPECT_STREQ(anthropic_error_type(400), "invalid_request_error");
    EXPECT_STREQ(anthropic_error_type(401), "authentication_error");
    EXPECT_STREQ(anthropic_error_type(404), "not_found_error");
    EXPECT_STREQ(anthropic_error_type(413), "request_too_large");
    EXPECT_STREQ(anthropic_error_type(429), "rate_limit_error");
    EXPECT_STREQ(anthropic_error_type(500), "api_error");
    EXPECT_STREQ(anthropic_error_type(503), "overloaded_error");
    ApiError e{429, "queue full", "rate_limit_error", "", "queue_full"};
    const json j = json::parse(anthropic_error_json(e));
    EXPECT_EQ(j["error"]["type"], "rate_limit_error");
    EXPECT_EQ(j["error"]["message"], "queue full");
}

// The SSE stream as (event name, data JSON) pairs.
std::vector<std::pair<std::string, json>> events_of(const std::string& stream) {
    std::vector<std::pair<std::string, json>> out;
    std::istringstream in(stream);
    std::string line, name;
    while (std::getline(in, line)) {
        if (line.rfind("event: ", 0) == 0) name = line.substr(7);
        if (line.rfind("data: ", 0) == 0) out.emplace_back(name, json::parse(line.substr(6)));
    }
    return out;
}

engine::RequestStats stats_of(int prompt, int reused, int documents, int generated) {
    engine::RequestStats s;
    s.num_prompt_tokens = prompt;
    s.reused_tokens = reused;
    s.document_tokens = documents;
    s.num_generated = generated;
    return s;
}

TEST(AnthropicRenderer, WholeMessage) {
    AnthropicRenderer r("claude-ish", "msg_1");
    engine::RagResult result;
    result.text = "Hello";
    result.finish_reason = engine::FinishReason::kStop;
    const json body = json::parse(r.whole_body({ChoiceResult{nullptr, &result}}, stats_of(100, 60, 80, 5)));
    EXPECT_EQ(body["id"], "msg_1");
    EXPECT_EQ(body["type"], "message");
    EXPECT_EQ(body["role"], "assistant");
    EXPECT_EQ(body["model"], "claude-ish");
    EXPECT_EQ(body["content"], json::parse(R"([{"type":"text","text":"Hello"}])"));
    EXPECT_EQ(body["stop_reason"], "end_turn");
    EXPECT_TRUE(body["stop_sequence"].is_null());
    EXPECT_EQ(body["usage"]["cache_read_input_tokens"], 60);
    EXPECT_EQ(body["usage"]["cache_creation_input_tokens"], 20);
    EXPECT_EQ(body["usage"]["input_tokens"], 20);
    EXPECT_EQ(body["usage"]["output_tokens"], 5);

    result.finish_reason = engine::FinishReason::kStop;
    result.stop_word = "END";
    const json stopped = json::parse(r.whole_body({ChoiceResult{nullptr, &result}}, stats_of(10, 0, 0, 2)));
    EXPECT_EQ(stopped["stop_reason"], "stop_sequence");
    EXPECT_EQ(stopped["stop_sequence"], "END");
    result.finish_reason = engine::FinishReason::kLength;
    result.stop_word.clear();
    const json capped = json::parse(r.whole_body({ChoiceResult{nullptr, &result}}, stats_of(10, 0, 0, 2)));
    EXPECT_EQ(capped["stop_reason"], "max_tokens");
    EXPECT_EQ(capped["usage"]["input_tokens"], 10);
    EXPECT_EQ(make_message_id().rfind("msg_", 0), 0u);
}

TEST(AnthropicRenderer, StreamEventsComeInAnthropicsOrder) {
    AnthropicRenderer r("m", "msg_2");
    PreparedRequest prepared;
    prepared.rag.segments = {{1, 2, 3}, {4, 5}};
    prepared.rag.tail = {6, 7};
    r.prepared(prepared);
    engine::RequestHandle handle(1);
    std::string out;
    r.stream_open(0, handle, out);
    engine::RequestEvent t1;
    t1.text = "Hel";
    engine::RequestEvent held;  // text held back: no delta
    engine::RequestEvent t2;
    t2.text = "lo";
    r.stream_token(0, t1, out);
    r.stream_token(0, held, out);
    r.stream_token(0, t2, out);
    engine::RequestEvent end;
    end.kind = engine::RequestEvent::Kind::kFinished;
    end.finish_reason = engine::FinishReason::kStop;
    end.stop_word = "\n";
    r.stream_end(0, end, stats_of(12, 4, 0, 3), out);
    r.stream_close(stats_of(12, 4, 0, 3), out);
    const auto events = events_of(out);
    std::vector<std::string> names;
    for (const auto& [name, data] : events) {
        names.push_back(name);
        EXPECT_EQ(data["type"], name) << "each event's data names it";
    }
    EXPECT_EQ(names,
              (std::vector<std::string>{"message_start", "content_block_start", "ping", "content_block_delta",
                                        "content_block_delta", "content_block_stop", "message_delta", "message_stop"}));
    EXPECT_EQ(events[0].second["message"]["id"], "msg_2");
    EXPECT_EQ(events[0].second["message"]["content"], json::array());
    EXPECT_TRUE(events[0].second["message"]["stop_reason"].is_null());
    EXPECT_EQ(events[0].second["message"]["usage"]["input_tokens"], 7) << "the whole laid-out prompt";
    EXPECT_EQ(events[0].second["message"]["usage"]["output_tokens"], 0);
    EXPECT_EQ(events[1].second["content_block"], json::parse(R"({"type":"text","text":""})"));
    EXPECT_EQ(events[3].second["delta"], json::parse(R"({"type":"text_delta","text":"Hel"})"));
    EXPECT_EQ(events[4].second["delta"]["text"], "lo");
    EXPECT_EQ(events[6].second["delta"]["stop_reason"], "stop_sequence");
    EXPECT_EQ(events[6].second["delta"]["stop_sequence"], "\n");
    EXPECT_EQ(events[6].second["usage"]["output_tokens"], 3);
    EXPECT_EQ(events[6].second["usage"]["cache_read_input_tokens"], 4);
}

TEST(AnthropicRenderer, ErrorsInAnthropicsShape) {
    AnthropicRenderer r("m");
    std::string out;
    r.stream_error(ApiError{500, "boom", "server_error", "", "internal_error"}, out);
    EXPECT_EQ(out.rfind("event: error\n", 0), 0u) << out;
    const auto events = events_of(out);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].second["type"], "error");
    EXPECT_EQ(events[0].second["error"]["type"], "api_error");
    EXPECT_EQ(events[0].second["error"]["message"], "boom");
    EXPECT_EQ(json::parse(r.error_body(invalid_request("bad", "x")))["error"]["type"], "invalid_request_error");
    EXPECT_NE(r.keep_alive().find("event: ping"), std::string::npos);
}

}  // namespace
}  // namespace lazyattn::server
