// OpenAI Responses (POST /v1/responses) over a real socket: the response object, its named event
// stream, documents reused exactly as chat completions reuse them (the same text, the same prompt,
// the cache hit whatever their order), and bad input refused by name with the server unharmed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

const json kDocs = {"gold is a chemical element with the symbol Au and atomic number 79",
                    {{"title", "Silver"}, {"text", "silver is a shiny metal, the best conductor of electricity"}}};

json responses_body(const json& extra = json::object()) {
    json b = {{"model", "any"},
              {"instructions", "answer briefly"},
              {"input", {{{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "what is gold?"}}}}}}},
              {"max_output_tokens", 4},
              {"temperature", 0},
              {"ignore_eos", true}};
    b.update(extra);
    return b;
}

struct NamedEvent {
    std::string name;
    json data;
};

// The named events of a text/event-stream body ("event: NAME" then "data: JSON").
std::vector<NamedEvent> named_events(const std::string& body) {
    std::vector<NamedEvent> events;
    size_t at = 0;
    NamedEvent current;
    while (at < body.size()) {
        size_t nl = body.find('\n', at);
        if (nl == std::string::npos) nl = body.size();
        const std::string line = body.substr(at, nl - at);
        at = nl + 1;
        if (line.rfind("event: ", 0) == 0) current.name = line.substr(7);
        if (line.rfind("data: ", 0) == 0) {
            current.data = parse_or_null(line.substr(6));
            events.push_back(current);
            current = NamedEvent{};
        }
    }
    return events;
}

TEST(ServerResponses, DocumentsAreReusedExactlyAsInChat) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const auto first = curl("POST", s.url("/v1/responses"), responses_body({{"documents", kDocs}}).dump());
    ASSERT_EQ(first.status, 200) << first.body;
    const json r1 = parse_or_null(first.body);
    EXPECT_EQ(r1["object"], "response");
    EXPECT_EQ(r1["id"].get<std::string>().rfind("resp_", 0), 0u) << r1;
    EXPECT_EQ(r1["status"], "incomplete") << r1;  // ignore_eos: it ran to max_output_tokens
    EXPECT_EQ(r1["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(r1["instructions"], "answer briefly");
    EXPECT_EQ(r1["max_output_tokens"], 4);
    ASSERT_EQ(r1["output"].size(), 1u) << r1;
    const json& msg = r1["output"][0];
    EXPECT_EQ(msg["type"], "message");
    EXPECT_EQ(msg["role"], "assistant");
    EXPECT_EQ(msg["id"].get<std::string>().rfind("msg_", 0), 0u);
    EXPECT_EQ(msg["content"][0]["type"], "output_text");
    EXPECT_EQ(r1["usage"]["output_tokens"], 4);
    EXPECT_EQ(r1["usage"]["total_tokens"],
              r1["usage"]["input_tokens"].get<int>() + r1["usage"]["output_tokens"].get<int>());

    // The same conversation as chat completions: the same prompt and the same greedy text.
    const json chat_body = {{"messages",
                             {{{"role", "system"}, {"content", "answer briefly"}},
                              {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "what is gold?"}}}}}}},
                            {"documents", kDocs},
                            {"max_tokens", 4},
                            {"temperature", 0},
                            {"ignore_eos", true}};
    const json chat = parse_or_null(curl("POST", s.url("/v1/chat/completions"), chat_body.dump()).body);
    ASSERT_TRUE(chat.contains("usage")) << chat;
    EXPECT_EQ(chat["usage"]["prompt_tokens"], r1["usage"]["input_tokens"]);
    EXPECT_EQ(chat["choices"][0]["message"]["content"], msg["content"][0]["text"]);

    // Reordered documents on the unprefixed route: both are cache hits.
    json reordered = responses_body({{"documents", {kDocs[1], kDocs[0]}}});
    const json r2 = parse_or_null(curl("POST", s.url("/responses"), reordered.dump()).body);
    ASSERT_TRUE(r2.contains("usage")) << r2;
    EXPECT_EQ(r2["usage"]["input_tokens"], r1["usage"]["input_tokens"]);
    const int cached = r2["usage"]["input_tokens_details"]["cached_tokens"].get<int>();
    EXPECT_GT(cached, r1["usage"]["input_tokens_details"]["cached_tokens"].get<int>()) << r2;
    EXPECT_GT(cached, r2["usage"]["input_tokens"].get<int>() / 2) << r2;
}

TEST(ServerResponses, StreamsNamedEventsInOrder) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const auto whole = parse_or_null(curl("POST", s.url("/v1/responses"), responses_body().dump()).body);
    const auto r = curl("POST", s.url("/v1/responses"), responses_body({{"stream", true}}).dump(), {"-N"});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
    const auto events = named_events(r.body);
    ASSERT_GE(events.size(), 9u) << r.body;
    const std::vector<std::string> head = {"response.created", "response.in_progress", "response.output_item.added",
                                           "response.content_part.added"};
    const std::vector<std::string> tail = {"response.output_text.done", "response.content_part.done",
                                           "response.output_item.done", "response.incomplete"};
    std::string text;
    for (size_t i = 0; i < events.size(); ++i) {
        const std::string& name = events[i].name;
        EXPECT_EQ(events[i].data["type"], name);
        EXPECT_EQ(events[i].data["sequence_number"], i) << name;
        if (i < head.size()) {
            EXPECT_EQ(name, head[i]);
        } else if (i + tail.size() >= events.size()) {
            EXPECT_EQ(name, tail[i + tail.size() - events.size()]);
        } else {
            EXPECT_EQ(name, "response.output_text.delta");
            text += events[i].data["delta"].get<std::string>();
        }
    }
    const json& last = events.back().data["response"];
    EXPECT_EQ(last["id"], events.front().data["response"]["id"]);
    EXPECT_EQ(last["output"][0]["content"][0]["text"], text);
    EXPECT_EQ(text, whole["output"][0]["content"][0]["text"]);  // the same greedy text either way
    EXPECT_EQ(last["usage"]["output_tokens"], 4);
    EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);  // the Responses stream has no [DONE]
}

// store: true (the default) keeps a response for its API key: GET answers it as it was sent,
// previous_response_id continues its conversation, DELETE drops it; store: false keeps nothing.
TEST(ServerResponses, KeptResponsesAreReadContinuedAndDeleted) {
    ServerProcess s(server_args({"--api-key", "key-one,key-two"}));
    ASSERT_TRUE(s.started()) << s.log();
    const std::vector<std::string> one = {"-H", "'Authorization: Bearer key-one'"};
    const std::vector<std::string> two = {"-H", "'Authorization: Bearer key-two'"};
    const auto first = curl("POST", s.url("/v1/responses"), responses_body().dump(), one);
    ASSERT_EQ(first.status, 200) << first.body;
    const json r1 = parse_or_null(first.body);
    const std::string id = r1["id"];
    const auto got = curl("GET", s.url("/v1/responses/" + id), "", one);
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_EQ(parse_or_null(got.body), r1);
    expect_api_error(curl("GET", s.url("/v1/responses/" + id), "", two), 404);  // another key's

    json next = responses_body({{"previous_response_id", id}, {"input", "and silver?"}});
    const json r2 = parse_or_null(curl("POST", s.url("/v1/responses"), next.dump(), one).body);
    ASSERT_TRUE(r2.contains("usage")) << r2;
    EXPECT_EQ(r2["previous_response_id"], id);
    // The earlier turns and answer come first (and are a prefix the cache serves).
    EXPECT_GT(r2["usage"]["input_tokens"].get<int>(),
              r1["usage"]["input_tokens"].get<int>() + r1["usage"]["output_tokens"].get<int>());
    EXPECT_GT(r2["usage"]["input_tokens_details"]["cached_tokens"].get<int>(), 0) << r2;
    const auto streamed = curl("POST", s.url("/v1/responses"),
                               responses_body({{"previous_response_id", r2["id"]}, {"stream", true}}).dump(), one);
    const auto events = named_events(streamed.body);
    ASSERT_FALSE(events.empty()) << streamed.body;
    const std::string streamed_id = events.back().data["response"]["id"];
    EXPECT_EQ(curl("GET", s.url("/v1/responses/" + streamed_id), "", one).status, 200);  // streamed ones too
    expect_api_error(curl("POST", s.url("/v1/responses"), next.dump(), two), 400);

    const auto deleted = curl("DELETE", s.url("/v1/responses/" + id), "", one);
    ASSERT_EQ(deleted.status, 200) << deleted.body;
    EXPECT_EQ(parse_or_null(deleted.body)["deleted"], true);
    expect_api_error(curl("GET", s.url("/v1/responses/" + id), "", one), 404);
    const auto gone = curl("POST", s.url("/v1/responses"), next.dump(), one);
    expect_api_error(gone, 400, "previous_response_not_found");
    EXPECT_EQ(parse_or_null(gone.body)["error"]["param"], "previous_response_id");

    const json unkept =
        parse_or_null(curl("POST", s.url("/v1/responses"), responses_body({{"store", false}}).dump(), one).body);
    ASSERT_TRUE(unkept.contains("id")) << unkept;
    EXPECT_EQ(unkept["store"], false);
    expect_api_error(curl("GET", s.url("/v1/responses/" + unkept["id"].get<std::string>()), "", one), 404);
}

TEST(ServerResponses, BadInputIsA400NamingTheFieldAndHarmsNothing) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json image = {{"role", "user"},
                        {"content",
                         {{{"type", "input_text"}, {"text", "what is this?"}},
                          {{"type", "input_image"}, {"image_url", "https://example.com/x.png"}}}}};
    const std::vector<std::pair<json, std::string>> cases = {
        {{{"input", {image}}}, "input[0].content[1]"},
        {{{"input", {{{"type", "custom_tool_call"}, {"call_id", "c1"}, {"input", "42"}}}}}, "input[0]"},
        {{{"input", {{{"type", "function_call_output"}, {"call_id", "c1"}}}}}, "input[0].output"},
        {responses_body({{"previous_response_id", "resp_123"}}), "previous_response_id"},
        {responses_body({{"text", {{"format", {{"type", "xml"}}}}}}), "text.format.type"},
        {responses_body({{"tools", {{{"type", "web_search"}}}}}), "tools[0].type"},
        {responses_body({{"tools", {{{"type", "function"}, {"name", "f g"}}}}}), "tools[0].name"},
        {responses_body({{"reasoning", {{"effort", "high"}}}}), "reasoning.effort"},
        {responses_body({{"max_output_tokens", 0}}), "max_output_tokens"},
        {responses_body({{"max_output_tokens", "ten"}}), "max_output_tokens"},
        {responses_body({{"documents", {{{"id", "no-such-document"}}}}}), "documents"},
    };
    for (const auto& [body, param] : cases) {
        const auto r = curl("POST", s.url("/v1/responses"), body.dump());
        expect_api_error(r, 400);
        EXPECT_EQ(parse_or_null(r.body)["error"]["param"], param) << r.body;
    }
    expect_api_error(curl("POST", s.url("/v1/responses"), "{\"input\": "), 400);
    expect_api_error(curl("GET", s.url("/v1/responses/resp_123")), 404);
    expect_api_error(curl("DELETE", s.url("/v1/responses/resp_123")), 404);
    const auto ok = curl("POST", s.url("/v1/responses"), responses_body().dump());
    EXPECT_EQ(ok.status, 200) << ok.body;
}

}  // namespace
}  // namespace lazyattn::testing
