// The OpenAI Responses API without sockets: every input form its parser takes, every bad field a
// 400 naming it, and the renderer's bodies and event sequence (order, sequence numbers, the
// response each lifecycle event carries).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/response_store.h"
#include "server/responses_renderer.h"
#include "server/responses_request.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

std::optional<ApiError> parse(json body, ResponsesRequest* out = nullptr) {
    ResponsesRequest r;
    auto e = parse_responses_request(body, r);
    if (out != nullptr) *out = std::move(r);
    return e;
}

TEST(ResponsesRequest, AStringInputIsOneUserMessage) {
    ResponsesRequest r;
    ASSERT_FALSE(parse({{"model", "m"}, {"input", "what is gold?"}}, &r));
    ASSERT_EQ(r.gen.messages.size(), 1u);
    EXPECT_TRUE(r.gen.chat);
    EXPECT_EQ(r.gen.messages[0].role, "user");
    EXPECT_EQ(r.gen.messages[0].content, "what is gold?");
    EXPECT_EQ(r.gen.model, "m");
    EXPECT_EQ(r.gen.max_tokens, -1);
    EXPECT_EQ(r.gen.n, 1);
    EXPECT_FALSE(r.echo.instructions);
    EXPECT_FALSE(r.echo.max_output_tokens);
}

TEST(ResponsesRequest, InstructionsComeFirstAndItemsKeepTheirRolesAndParts) {
    ResponsesRequest r;
    const json body = {
        {"instructions", "be brief"},
        {"input",
         {{{"role", "developer"}, {"content", "answer in French"}},
          {{"type", "message"}, {"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "hi"}}}}},
          {{"type", "message"},
           {"id", "msg_1"},
           {"status", "completed"},
           {"role", "assistant"},
           {"content", {{{"type", "output_text"}, {"text", "bonjour"}, {"annotations", json::array()}}}}},
          {{"role", "user"},
           {"content", {{{"type", "input_text"}, {"text", "doc one"}}, {{"type", "input_text"}, {"text", "and?"}}}}}}},
        {"max_output_tokens", 7},
        {"temperature", 0.5},
        {"top_p", 0.9},
        {"stream", true}};
    ASSERT_FALSE(parse(body, &r));
    ASSERT_EQ(r.gen.messages.size(), 5u);
    EXPECT_EQ(r.gen.messages[0].role, "system");
    EXPECT_EQ(r.gen.messages[0].content, "be brief");
    EXPECT_EQ(r.gen.messages[1].role, "system");  // developer, as chat reads it
    EXPECT_EQ(r.gen.messages[2].content, "hi");
    EXPECT_EQ(r.gen.messages[3].role, "assistant");
    EXPECT_EQ(r.gen.messages[3].content, "bonjour");
    EXPECT_EQ(r.gen.messages[4].content, "doc one\nand?");  // parts joined by a newline, as llama-server
    ASSERT_EQ(r.gen.message_parts[4].size(), 2u);           // kept as parts, for documents_from "parts"
    EXPECT_EQ(r.gen.message_parts[4][0].text, "doc one");
    EXPECT_EQ(r.gen.max_tokens, 7);
    EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.gen.sampling.top_p, 0.9f);
    EXPECT_TRUE(r.gen.stream);
    EXPECT_EQ(*r.echo.instructions, "be brief");
    EXPECT_EQ(*r.echo.max_output_tokens, 7);
    EXPECT_DOUBLE_EQ(r.echo.temperature, 0.5);
    EXPECT_DOUBLE_EQ(r.echo.top_p, 0.9);
}

TEST(ResponsesRequest, ChatExtensionsReadAsInChat) {
    ResponsesRequest r;
    const json body = {{"input", "q"},
                       {"documents", {"plain", {{"title", "T"}, {"text", "body"}}, {{"id", "abc"}}}},
                       {"cache_salt", "tenant-a"},
                       {"document_reuse", "anchor+bias=-1"},
                       {"documents_from", "parts"},
                       {"stop", {"\n\n"}},
                       {"seed", 3},
                       {"top_k", 5},
                       {"ignore_eos", true}};
    ASSERT_FALSE(parse(body, &r));
    ASSERT_EQ(r.gen.documents.size(), 3u);
    EXPECT_EQ(r.gen.documents[1].title, "T");
    EXPECT_TRUE(r.gen.documents[2].by_id());
    EXPECT_EQ(r.gen.cache_salt, "tenant-a");
    EXPECT_TRUE(r.gen.document_reuse.has_value());
    EXPECT_EQ(r.gen.documents_source, DocumentsSource::kParts);
    EXPECT_EQ(r.gen.stop, std::vector<std::string>{"\n\n"});
    EXPECT_TRUE(r.gen.seed_given);
    EXPECT_EQ(r.gen.sampling.top_k, 5);
    EXPECT_TRUE(r.gen.ignore_eos);
}

TEST(ResponsesRequest, NoOpFieldsAreAcceptedAndEchoed) {
    ResponsesRequest r;
    const json body = {{"input", "q"},
                       {"store", false},
                       {"metadata", {{"k", "v"}}},
                       {"truncation", "auto"},
                       {"include", {"reasoning.encrypted_content"}},
                       {"text", {{"format", {{"type", "text"}}}, {"verbosity", "medium"}}},
                       {"tools", json::array()},
                       {"tool_choice", "auto"},
                       {"parallel_tool_calls", false},
                       {"reasoning", json::object()},
                       {"user", "u-1"},
                       {"service_tier", "auto"},
                       {"prompt_cache_key", "k"},
                       {"stream_options", {{"include_obfuscation", false}}},
                       {"background", false},
                       {"previous_response_id", nullptr},
                       {"top_logprobs", 0}};
    ASSERT_FALSE(parse(body, &r));
    EXPECT_FALSE(r.echo.store);
    EXPECT_EQ(r.echo.metadata, json({{"k", "v"}}));
    EXPECT_EQ(r.echo.truncation, "auto");
    EXPECT_EQ(*r.echo.user, "u-1");
}

TEST(ResponsesRequest, TextFormatIsChatsResponseFormat) {
    const json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "boolean"}}}}}, {"required", {"a"}}};
    const json formats[] = {{{"type", "json_object"}},
                            {{"type", "json_schema"}, {"name", "answer"}, {"schema", schema}, {"strict", true}}};
    for (const json& format : formats) {
        ResponsesRequest r;
        ASSERT_FALSE(parse({{"input", "q"}, {"text", {{"format", format}}}}, &r)) << format;
        EXPECT_TRUE(r.gen.constraint.has_value()) << format;
        EXPECT_EQ(r.echo.text_format, format);
    }
    ResponsesRequest plain;
    ASSERT_FALSE(parse({{"input", "q"}, {"text", {{"format", {{"type", "text"}}}}}}, &plain));
    EXPECT_FALSE(plain.gen.constraint.has_value());
}

TEST(ResponsesRequest, TheBodyIsConsumedNotCopied) {
    json body = {{"input", {{{"role", "user"}, {"content", std::string(1000, 'x')}}}}, {"documents", {"d"}}};
    ResponsesRequest r;
    ASSERT_FALSE(parse_responses_request(body, r));
    EXPECT_EQ(r.gen.messages[0].content.size(), 1000u);
    EXPECT_TRUE(body["documents"].is_null());  // moved into the request
}

struct BadBody {
    json body;
    std::string param;
};

TEST(ResponsesRequest, EveryBadFieldIsA400NamingIt) {
    const json user = {{{"role", "user"}, {"content", "q"}}};
    auto with = [&](json extra) {
        json b = {{"input", "q"}};
        for (auto& [k, v] : extra.items()) b[k] = v;
        return b;
    };
    auto item = [](json i) { return json{{"input", json::array({i})}}; };
    auto part = [](json p) {
        return json{
            {"input", {{{"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", "a"}}, p})}}}}};
    };
    const std::vector<BadBody> cases = {
        {json::array(), ""},
        {json::object(), "input"},
        {{{"input", 5}}, "input"},
        {{{"input", json::array()}}, "input"},
        {{{"input", {5}}}, "input[0]"},
        {item({{"type", "function_call"}, {"name", "f"}, {"arguments", "{}"}}), "input[0].call_id"},
        {item({{"type", "function_call_output"}, {"call_id", "c"}}), "input[0].output"},
        {item({{"type", "custom_tool_call"}, {"call_id", "c"}}), "input[0]"},
        {item({{"type", "web_search_call"}}), "input[0]"},
        {item({{"type", "reasoning"}, {"summary", json::array()}}), "input[0]"},
        {item({{"type", "item_reference"}, {"id", "msg_1"}}), "input[0]"},
        {item({{"type", "frobnicate"}, {"role", "user"}, {"content", "q"}}), "input[0].type"},
        {item({{"type", 3}, {"role", "user"}, {"content", "q"}}), "input[0].type"},
        {item({{"content", "q"}}), "input[0].role"},
        {item({{"role", "tool"}, {"content", "q"}}), "input[0].role"},
        {item({{"role", 1}, {"content", "q"}}), "input[0].role"},
        {item({{"role", "user"}}), "input[0].content"},
        {item({{"role", "user"}, {"content", 5}}), "input[0].content"},
        {item({{"role", "user"}, {"content", "\xff"}}), "input[0].content"},
        {part({{"type", "input_image"}, {"image_url", "http://x/y.png"}}), "input[0].content[1]"},
        {part({{"type", "input_file"}, {"file_id", "file_1"}}), "input[0].content[1]"},
        {part({{"type", "input_audio"}}), "input[0].content[1]"},
        {part({{"text", "a"}}), "input[0].content[1].type"},
        {part({{"type", "text"}, {"text", "a"}}), "input[0].content[1].type"},
        {part({{"type", "input_text"}}), "input[0].content[1].text"},
        {part({{"type", "input_text"}, {"text", 5}}), "input[0].content[1].text"},
        {part({{"type", "input_text"}, {"text", "\xc3"}}), "input[0].content[1].text"},
        {part({{"type", "input_text"}, {"id", 5}}), "input[0].content[1].id"},
        {part(5), "input[0].content[1]"},
        {{{"input", {{{"role", "user"}, {"content", "q"}}, {{"role", "assistant"}, {"content", "a"}}}}}, "input"},
        {with({{"instructions", 5}}), "instructions"},
        {with({{"max_output_tokens", 0}}), "max_output_tokens"},
        {with({{"max_output_tokens", "10"}}), "max_output_tokens"},
        {with({{"max_output_tokens", 1.5}}), "max_output_tokens"},
        {with({{"temperature", 3}}), "temperature"},
        {with({{"temperature", "hot"}}), "temperature"},
        {with({{"top_p", -1}}), "top_p"},
        {with({{"stream", "yes"}}), "stream"},
        {with({{"store", "yes"}}), "store"},
        {with({{"previous_response_id", "resp_1"}}), "previous_response_id"},  // none is kept
        {with({{"previous_response_id", 5}}), "previous_response_id"},
        {with({{"conversation", "conv_1"}}), "conversation"},
        {with({{"prompt", {{"id", "pmpt_1"}}}}), "prompt"},
        {with({{"background", true}}), "background"},
        {with({{"background", 1}}), "background"},
        {with({{"text", 5}}), "text"},
        {with({{"text", {{"format", "text"}}}}), "text.format"},
        {with({{"text", {{"format", {{"type", "xml"}}}}}}), "text.format.type"},
        {with({{"text", {{"format", {{"type", "json_schema"}, {"name", "x"}}}}}}), "text.format"},
        {with({{"guided_choice", 5}}), "guided_choice"},
        {with({{"text", {{"verbosity", "low"}}}}), "text.verbosity"},
        {with({{"tools", {{{"type", "function"}, {"name", "f g"}}}}}), "tools[0].name"},
        {with({{"tools", {{{"type", "web_search"}}}}}), "tools[0].type"},
        {with({{"tools", "all"}}), "tools"},
        {with({{"tool_choice", "required"}}), "tool_choice"},
        {with({{"tool_choice", {{"type", "function"}, {"name", "f"}}}}), "tool_choice.name"},
        {with({{"parallel_tool_calls", "yes"}}), "parallel_tool_calls"},
        {with({{"reasoning", {{"effort", "low"}}}}), "reasoning.effort"},
        {with({{"reasoning", {{"summary", "auto"}}}}), "reasoning.summary"},
        {with({{"reasoning", "high"}}), "reasoning"},
        {with({{"metadata", "x"}}), "metadata"},
        {with({{"metadata", {{"k", 5}}}}), "metadata.k"},
        {with({{"metadata", {{"k", std::string(513, 'v')}}}}), "metadata.k"},
        {with({{"metadata", {{std::string(65, 'k'), "v"}}}}), "metadata"},
        {with({{"truncation", "middle"}}), "truncation"},
        {with({{"top_logprobs", 3}}), "top_logprobs"},
        {with({{"top_logprobs", "3"}}), "top_logprobs"},
        {with({{"include", {"message.output_text.logprobs"}}}), "include"},
        {with({{"include", "all"}}), "include"},
        {with({{"include", {5}}}), "include"},
        {with({{"stream_options", {{"include_obfuscation", "no"}}}}), "stream_options.include_obfuscation"},
        {with({{"user", 5}}), "user"},
        {with({{"max_tool_calls", "many"}}), "max_tool_calls"},
        {with({{"max_tokens", 5}}), "max_tokens"},
        {with({{"max_completion_tokens", 5}}), "max_completion_tokens"},
        {with({{"messages", user}}), "messages"},
        {with({{"n", 2}}), "n"},
        {with({{"logprobs", true}}), "logprobs"},
        {with({{"model", 5}}), "model"},
        {with({{"documents", 5}}), "documents"},
        {with({{"documents", {{{"text", ""}}}}}), "documents[0]"},
        {with({{"cache_salt", 5}}), "cache_salt"},
        {with({{"document_reuse", "bogus"}}), "document_reuse"},
        {with({{"documents_from", "somewhere"}}), "documents_from"},
        {with({{"stop", 5}}), "stop"},
        {with({{"response_format", {{"type", "json_object"}}}}), "response_format"},
    };
    for (const BadBody& c : cases) {
        auto e = parse(c.body);
        ASSERT_TRUE(e.has_value()) << c.body.dump();
        EXPECT_EQ(e->http_status, 400) << c.body.dump();
        EXPECT_EQ(e->param, c.param) << c.body.dump() << " -> " << e->message;
        EXPECT_FALSE(e->message.empty());
    }
}

TEST(ResponsesRequest, APreviousResponsesTurnsComeAfterTheInstructions) {
    PreviousResponseLookup previous = [](const std::string& id) -> std::optional<std::vector<tokenizer::ChatMessage>> {
        if (id != "resp_kept") return std::nullopt;
        return std::vector<tokenizer::ChatMessage>{{"user", "my name is Ada"}, {"assistant", "hello Ada"}};
    };
    json body = {{"instructions", "be brief"}, {"previous_response_id", "resp_kept"}, {"input", "what is my name?"}};
    ResponsesRequest r;
    ASSERT_FALSE(parse_responses_request(body, r, previous));
    ASSERT_EQ(r.gen.messages.size(), 4u);
    EXPECT_EQ(r.instruction_messages, 1u);
    EXPECT_EQ(r.gen.messages[0].content, "be brief");
    EXPECT_EQ(r.gen.messages[1].content, "my name is Ada");
    EXPECT_EQ(r.gen.messages[2].role, "assistant");
    EXPECT_EQ(r.gen.messages[3].content, "what is my name?");
    EXPECT_EQ(*r.echo.previous_response_id, "resp_kept");
    json unknown = {{"previous_response_id", "resp_other"}, {"input", "q"}};
    ResponsesRequest u;
    auto e = parse_responses_request(unknown, u, previous);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "previous_response_id");
    EXPECT_EQ(e->code, "previous_response_not_found");
}

// The agent loop: a kept response that asked for a function call, continued with the call's
// output. The call (and an earlier call's output) stay in the conversation as chat carries them.
TEST(ResponsesRequest, APreviousResponsesFunctionCallsComeBackWithTheirOutputs) {
    PreviousResponseLookup previous = [](const std::string&) -> std::optional<std::vector<tokenizer::ChatMessage>> {
        tokenizer::ChatMessage asked{"assistant", ""};
        asked.tool_calls.push_back({"call_1", "search", "{\"query\":\"gold\"}"});
        tokenizer::ChatMessage answered{"tool", "gold is Au"};
        answered.tool_call_id = "call_0";
        return std::vector<tokenizer::ChatMessage>{{"user", "find gold"}, answered, asked};
    };
    json body = {{"previous_response_id", "resp_kept"},
                 {"input", {{{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "79"}}}}};
    ResponsesRequest r;
    ASSERT_FALSE(parse_responses_request(body, r, previous));
    ASSERT_EQ(r.gen.messages.size(), 4u);
    EXPECT_EQ(r.gen.messages[1].role, "tool");
    EXPECT_EQ(r.gen.messages[1].tool_call_id, "call_0");
    const tokenizer::ChatMessage& call = r.gen.messages[2];
    EXPECT_EQ(call.role, "assistant");
    ASSERT_EQ(call.tool_calls.size(), 1u);
    EXPECT_EQ(call.tool_calls[0].id, "call_1");
    EXPECT_EQ(call.tool_calls[0].name, "search");
    EXPECT_EQ(json::parse(call.tool_calls[0].arguments), json({{"query", "gold"}}));
    EXPECT_EQ(r.gen.messages[3].role, "tool");
    EXPECT_EQ(r.gen.messages[3].tool_call_id, "call_1");
    EXPECT_EQ(r.gen.messages[3].content, "79");
}

TEST(ResponsesRequest, ChatErrorsSpeakThisApisNames) {
    auto e = parse({{"input", "q"}, {"max_output_tokens", -3}});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "max_output_tokens");
    EXPECT_NE(e->message.find("'max_output_tokens'"), std::string::npos) << e->message;
    const ApiError front = responses_field_names(invalid_request(
        "the prompt (messages) and max_tokens=9 pass the context", "messages", "context_length_exceeded"));
    EXPECT_EQ(front.param, "input");
    EXPECT_EQ(front.message, "the prompt (input) and max_output_tokens=9 pass the context");
    EXPECT_EQ(responses_field_names(invalid_request("x", "max_tokens_cap")).param, "max_tokens_cap");
}

// --- the store --------------------------------------------------------------------------------

StoredResponse stored(size_t body_bytes) {
    return StoredResponse{std::string(body_bytes, 'x'), {{"user", "q"}, {"assistant", "a"}}};
}

TEST(ResponseStore, KeepsGetsAndDeletesPerTenant) {
    ResponseStore store(ResponseStore::Limits{});
    store.put("key-a", "resp_1", stored(10));
    ASSERT_TRUE(store.get("key-a", "resp_1"));
    EXPECT_EQ(store.get("key-a", "resp_1")->conversation.size(), 2u);
    EXPECT_FALSE(store.get("key-b", "resp_1"));  // another API key sees nothing
    EXPECT_FALSE(store.erase("key-b", "resp_1"));
    EXPECT_TRUE(store.erase("key-a", "resp_1"));
    EXPECT_FALSE(store.get("key-a", "resp_1"));
    EXPECT_EQ(store.size(), 0u);
    EXPECT_EQ(store.bytes(), 0u);
}

// A kept answer's function calls count in its size, so a tenant's byte bound holds them too.
TEST(ResponseStore, FunctionCallsCountInTheBytesKept) {
    StoredResponse plain{"{}", {{"assistant", ""}}};
    StoredResponse with_call = plain;
    with_call.conversation[0].tool_calls.push_back({"call_1", "search", std::string(5000, 'x')});
    EXPECT_GE(with_call.bytes(), plain.bytes() + 5000);
    ResponseStore store(ResponseStore::Limits{100, 4000, size_t(1) << 30});
    store.put("t", "r1", with_call);
    EXPECT_FALSE(store.get("t", "r1"));  // larger than the tenant's bound: not kept
    EXPECT_EQ(store.bytes(), 0u);
}

TEST(ResponseStore, ATenantsBoundsDropItsLeastRecentlyUsed) {
    ResponseStore store(ResponseStore::Limits{3, size_t(1) << 20, size_t(1) << 30});
    for (const char* id : {"r1", "r2", "r3"}) store.put("t", id, stored(10));
    store.put("other", "o1", stored(10));
    ASSERT_TRUE(store.get("t", "r1"));  // now the most recent: r2 is the oldest
    store.put("t", "r4", stored(10));
    EXPECT_FALSE(store.get("t", "r2"));
    EXPECT_TRUE(store.get("t", "r1"));
    EXPECT_TRUE(store.get("t", "r3"));
    EXPECT_TRUE(store.get("t", "r4"));
    EXPECT_TRUE(store.get("other", "o1"));  // another tenant's bound is its own
    EXPECT_EQ(store.size(), 4u);

    ResponseStore by_bytes(ResponseStore::Limits{100, 10000, size_t(1) << 30});
    for (int i = 0; i < 5; ++i) by_bytes.put("t", "r" + std::to_string(i), stored(3000));
    EXPECT_LE(by_bytes.bytes(), 10000u);
    EXPECT_FALSE(by_bytes.get("t", "r0"));
    EXPECT_TRUE(by_bytes.get("t", "r4"));
    by_bytes.put("t", "huge", stored(20000));  // larger than the bound alone: not kept, nothing dropped
    EXPECT_FALSE(by_bytes.get("t", "huge"));
    EXPECT_TRUE(by_bytes.get("t", "r4"));
}

TEST(ResponseStore, TheOverallBoundDropsFromTheLargestTenant) {
    ResponseStore store(ResponseStore::Limits{100, 20000, 25000});
    for (int i = 0; i < 4; ++i) store.put("big", "b" + std::to_string(i), stored(4000));
    store.put("small", "s0", stored(4000));
    store.put("small", "s1", stored(4000));
    EXPECT_LE(store.bytes(), 25000u);
    EXPECT_TRUE(store.get("small", "s0"));
    EXPECT_TRUE(store.get("small", "s1"));
    EXPECT_FALSE(store.get("big", "b0"));
    EXPECT_TRUE(store.get("big", "b3"));
}

// --- the renderer -----------------------------------------------------------------------------

struct SseEvent {
    std::string name;
    json data;
};

std::vector<SseEvent> parse_sse(const std::string& text) {
    std::vector<SseEvent> events;
    size_t start = 0;
    for (size_t end = text.find("\n\n"); end != std::string::npos; end = text.find("\n\n", start)) {
        const std::string block = text.substr(start, end - start);
        start = end + 2;
        SseEvent e;
        std::string data;
        size_t at = 0;
        while (at < block.size()) {
            size_t nl = block.find('\n', at);
            if (nl == std::string::npos) nl = block.size();
            const std::string line = block.substr(at, nl - at);
            if (line.rfind("event: ", 0) == 0) e.name = line.substr(7);
            if (line.rfind("data: ", 0) == 0) data += line.substr(6);
            at = nl + 1;
        }
        e.data = json::parse(data);
        events.push_back(std::move(e));
    }
    EXPECT_EQ(start, text.size()) << "bytes after the last event";
    return events;
}

engine::RequestEvent token(const std::string& text) {
    engine::RequestEvent e;
    e.kind = engine::RequestEvent::Kind::kToken;
    e.text = text;
    return e;
}

engine::RequestEvent finished(engine::FinishReason reason) {
    engine::RequestEvent e;
    e.kind = engine::RequestEvent::Kind::kFinished;
    e.finish_reason = reason;
    return e;
}

engine::RequestStats usage_of(int32_t prompt, int32_t cached, int32_t generated) {
    engine::RequestStats s;
    s.num_prompt_tokens = prompt;
    s.reused_tokens = cached;
    s.num_generated = generated;
    return s;
}

ResponsesEcho echo_with_instructions() {
    ResponsesEcho echo;
    echo.instructions = "be brief";
    echo.max_output_tokens = 3;
    echo.temperature = 0;
    return echo;
}

std::string stream_of(ResponsesRenderer& r, engine::FinishReason reason) {
    engine::RequestHandle handle(1);
    std::string out;
    r.stream_open(0, handle, out);
    r.stream_token(0, token("Hel"), out);
    r.stream_token(0, token(""), out);  // held back: nothing goes out
    r.stream_token(0, token("lo"), out);
    r.stream_end(0, finished(reason), usage_of(10, 4, 2), out);
    r.stream_close(usage_of(10, 4, 2), out);
    return out;
}

TEST(ResponsesRenderer, StreamsTheEventsInOrderWithSequenceNumbers) {
    ResponsesRenderer r(echo_with_instructions(), "served-model");
    const auto events = parse_sse(stream_of(r, engine::FinishReason::kStop));
    const std::vector<std::string> want = {"response.created",           "response.in_progress",
                                           "response.output_item.added", "response.content_part.added",
                                           "response.output_text.delta", "response.output_text.delta",
                                           "response.output_text.done",  "response.content_part.done",
                                           "response.output_item.done",  "response.completed"};
    ASSERT_EQ(events.size(), want.size());
    for (size_t i = 0; i < events.size(); ++i) {
        EXPECT_EQ(events[i].name, want[i]);
        EXPECT_EQ(events[i].data["type"], want[i]);  // the event name and its type agree
        EXPECT_EQ(events[i].data["sequence_number"], i);
    }
    EXPECT_EQ(events[0].data["response"]["id"], r.id());
    EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
    EXPECT_EQ(events[0].data["response"]["output"], json::array());
    EXPECT_TRUE(events[0].data["response"]["usage"].is_null());
    EXPECT_EQ(events[2].data["item"]["id"], r.message_id());
    EXPECT_EQ(events[2].data["item"]["status"], "in_progress");
    EXPECT_EQ(events[2].data["output_index"], 0);
    for (size_t i = 3; i <= 7; ++i) {
        EXPECT_EQ(events[i].data["item_id"], r.message_id()) << events[i].name;
        EXPECT_EQ(events[i].data["output_index"], 0);
        EXPECT_EQ(events[i].data["content_index"], 0);
    }
    EXPECT_EQ(events[4].data["delta"], "Hel");
    EXPECT_EQ(events[5].data["delta"], "lo");
    EXPECT_EQ(events[6].data["text"], "Hello");
    EXPECT_EQ(events[7].data["part"]["text"], "Hello");
    EXPECT_EQ(events[8].data["item"]["status"], "completed");
    EXPECT_EQ(events[8].data["item"]["content"][0]["text"], "Hello");
    const json& done = events[9].data["response"];
    EXPECT_EQ(done["id"], r.id());
    EXPECT_EQ(done["status"], "completed");
    EXPECT_TRUE(done["incomplete_details"].is_null());
    EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hello");
    EXPECT_EQ(done["usage"]["input_tokens"], 10);
    EXPECT_EQ(done["usage"]["input_tokens_details"]["cached_tokens"], 4);
    EXPECT_EQ(done["usage"]["output_tokens"], 2);
    EXPECT_EQ(done["usage"]["total_tokens"], 12);
    EXPECT_EQ(done["instructions"], "be brief");
    EXPECT_EQ(done["max_output_tokens"], 3);
}

TEST(ResponsesRenderer, ALengthStopIsAnIncompleteResponse) {
    ResponsesRenderer r(echo_with_instructions(), "m");
    const auto events = parse_sse(stream_of(r, engine::FinishReason::kLength));
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().name, "response.incomplete");
    EXPECT_EQ(events.back().data["response"]["status"], "incomplete");
    EXPECT_EQ(events.back().data["response"]["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(events[events.size() - 2].data["item"]["status"], "incomplete");
}

TEST(ResponsesRenderer, AWholeResponseIsOneResponseObject) {
    ResponsesRenderer r(echo_with_instructions(), "served-model");
    engine::RequestHandle handle(1);
    engine::RagResult result;
    result.text = "Hello";
    result.finish_reason = engine::FinishReason::kStop;
    const json body = json::parse(r.whole_body({ChoiceResult{&handle, &result}}, usage_of(10, 4, 2)));
    EXPECT_EQ(body["object"], "response");
    EXPECT_EQ(body["id"], r.id());
    EXPECT_EQ(body["id"].get<std::string>().rfind("resp_", 0), 0u);
    EXPECT_EQ(body["status"], "completed");
    EXPECT_EQ(body["model"], "served-model");
    EXPECT_TRUE(body["created_at"].is_number_integer());
    ASSERT_EQ(body["output"].size(), 1u);
    const json& msg = body["output"][0];
    EXPECT_EQ(msg["type"], "message");
    EXPECT_EQ(msg["id"].get<std::string>().rfind("msg_", 0), 0u);
    EXPECT_EQ(msg["role"], "assistant");
    EXPECT_EQ(msg["status"], "completed");
    EXPECT_EQ(msg["content"], json::parse(R"([{"type":"output_text","text":"Hello","annotations":[]}])"));
    EXPECT_EQ(body["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
    EXPECT_EQ(body["tools"], json::array());
    EXPECT_EQ(body["temperature"], 0.0);
    EXPECT_EQ(body["text"]["format"]["type"], "text");
    result.finish_reason = engine::FinishReason::kLength;
    ResponsesRenderer cut(ResponsesEcho{}, "m");
    const json incomplete = json::parse(cut.whole_body({ChoiceResult{&handle, &result}}, usage_of(1, 0, 3)));
    EXPECT_EQ(incomplete["status"], "incomplete");
    EXPECT_EQ(incomplete["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(incomplete["output"][0]["status"], "incomplete");
    EXPECT_TRUE(incomplete["instructions"].is_null());
    EXPECT_TRUE(incomplete["max_output_tokens"].is_null());
    EXPECT_NE(cut.id(), r.id());
}

TEST(ResponsesRenderer, AnErrorMidStreamIsAnErrorEventThenResponseFailed) {
    ResponsesRenderer r(ResponsesEcho{}, "m");
    engine::RequestHandle handle(1);
    std::string out;
    r.stream_open(0, handle, out);
    r.stream_token(0, token("par"), out);
    r.stream_error(ApiError{503, "the server is shutting down", "server_error", "", "cancelled"}, out);
    const auto events = parse_sse(out);
    ASSERT_EQ(events.size(), 7u);
    EXPECT_EQ(events[5].name, "error");
    EXPECT_EQ(events[5].data["code"], "cancelled");
    EXPECT_EQ(events[5].data["message"], "the server is shutting down");
    EXPECT_TRUE(events[5].data["param"].is_null());
    EXPECT_EQ(events[5].data["sequence_number"], 5);
    EXPECT_EQ(events[6].name, "response.failed");
    EXPECT_EQ(events[6].data["sequence_number"], 6);
    const json& failed = events[6].data["response"];
    EXPECT_EQ(failed["status"], "failed");
    EXPECT_EQ(failed["error"]["code"], "server_error");
    EXPECT_EQ(failed["output"][0]["content"][0]["text"], "par");
    EXPECT_EQ(failed["output"][0]["status"], "incomplete");
}

TEST(ResponsesRenderer, AFinishedResponseIsHandedOnOnce) {
    for (const bool stream : {false, true}) {
        ResponsesRenderer r(ResponsesEcho{}, "m");
        int calls = 0;
        std::string kept_id, kept_body, kept_text;
        r.on_done([&](const std::string& id, const std::string& body, const std::string& text) {
            ++calls;
            kept_id = id;
            kept_body = body;
            kept_text = text;
        });
        if (stream) {
            const auto events = parse_sse(stream_of(r, engine::FinishReason::kStop));
            EXPECT_EQ(json::parse(kept_body), events.back().data["response"]);
        } else {
            engine::RequestHandle handle(1);
            engine::RagResult result;
            result.text = "Hello";
            result.finish_reason = engine::FinishReason::kStop;
            EXPECT_EQ(r.whole_body({ChoiceResult{&handle, &result}}, usage_of(1, 0, 1)), kept_body);
        }
        EXPECT_EQ(calls, 1);
        EXPECT_EQ(kept_id, r.id());
        EXPECT_EQ(kept_text, "Hello");
    }
    ResponsesRenderer failed(ResponsesEcho{}, "m");
    bool called = false;
    failed.on_done([&](const std::string&, const std::string&, const std::string&) { called = true; });
    engine::RequestHandle handle(1);
    std::string out;
    failed.stream_open(0, handle, out);
    failed.stream_error(ApiError{500, "boom", "server_error", "", ""}, out);
    EXPECT_FALSE(called);  // a failed response is not kept
}

TEST(ResponsesRenderer, ErrorBodiesAreOpenAisShapeInThisApisNames) {
    ResponsesRenderer r(ResponsesEcho{}, "m");
    const json body = json::parse(r.error_body(invalid_request("'max_tokens' is too large", "max_tokens")));
    EXPECT_EQ(body["error"]["param"], "max_output_tokens");
    EXPECT_EQ(body["error"]["message"], "'max_output_tokens' is too large");
    EXPECT_EQ(body["error"]["type"], "invalid_request_error");
}

}  // namespace
}  // namespace lazyattn::server
