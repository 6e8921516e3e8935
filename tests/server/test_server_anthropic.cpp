// The Anthropic Messages API over a real socket: POST /v1/messages whole and streamed (Anthropic's
// event order), x-api-key and anthropic-version, document blocks as cached documents (hit in
// another order), stop sequences, count_tokens, and errors in Anthropic's shape.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

const std::vector<std::string> kHeaders = {"-H 'anthropic-version: 2023-06-01'"};

json document(const std::string& text, const std::string& title = "") {
    json d = {{"type", "document"}, {"source", {{"type", "text"}, {"media_type", "text/plain"}, {"data", text}}}};
    if (!title.empty()) d["title"] = title;
    return d;
}

json message_body(const json& content, int max_tokens = 6, const json& extra = json::object()) {
    json b = {{"model", "claude-test"},
              {"max_tokens", max_tokens},
              {"temperature", 0},
              {"messages", {{{"role", "user"}, {"content", content}}}}};
    b.update(extra);
    return b;
}

HttpResult post(const ServerProcess& s, const std::string& path, const json& body,
                std::vector<std::string> extra = kHeaders) {
    return curl("POST", s.url(path), body.dump(), extra);
}

// Anthropic's error shape, with this status and error type.
void expect_anthropic_error(const HttpResult& r, int status, const std::string& type, const std::string& names = "") {
    EXPECT_EQ(r.status, status) << r.body;
    const json j = parse_or_null(r.body);
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_EQ(j["type"], "error") << r.body;
    EXPECT_EQ(j["error"]["type"], type) << r.body;
    ASSERT_TRUE(j["error"]["message"].is_string()) << r.body;
    if (!names.empty()) {
        EXPECT_NE(j["error"]["message"].get<std::string>().find(names), std::string::npos) << r.body;
    }
}

// (event name, data) of a text/event-stream body.
std::vector<std::pair<std::string, json>> named_events(const std::string& body) {
    std::vector<std::pair<std::string, json>> out;
    std::istringstream in(body);
    std::string line, name;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("event: ", 0) == 0) name = line.substr(7);
        if (line.rfind("data: ", 0) == 0) out.emplace_back(name, parse_or_null(line.substr(6)));
    }
    return out;
}

int64_t prompt_total(const json& usage) {
    return usage["input_tokens"].get<int64_t>() + usage["cache_read_input_tokens"].get<int64_t>() +
           usage["cache_creation_input_tokens"].get<int64_t>();
}

TEST(ServerAnthropic, WholeMessageWithApiKeyHeader) {
    ServerProcess s(server_args({"--api-key", "alpha-key"}));
    ASSERT_TRUE(s.started()) << s.log();
    std::vector<std::string> headers = kHeaders;
    headers.push_back("-H 'x-api-key: alpha-key'");
    const auto r = post(s, "/v1/messages", message_body("what is gold?"), headers);
    ASSERT_EQ(r.status, 200) << r.body;
    const json m = parse_or_null(r.body);
    EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u) << m;
    EXPECT_EQ(m["type"], "message");
    EXPECT_EQ(m["role"], "assistant");
    EXPECT_EQ(m["model"], "claude-test");
    ASSERT_EQ(m["content"].size(), 1u) << m;
    EXPECT_EQ(m["content"][0]["type"], "text");
    EXPECT_TRUE(m["content"][0]["text"].is_string());
    const int64_t out = m["usage"]["output_tokens"];
    EXPECT_GE(out, 1);
    EXPECT_LE(out, 6);
    EXPECT_EQ(m["stop_reason"], out == 6 ? "max_tokens" : "end_turn") << m;
    EXPECT_TRUE(m["stop_sequence"].is_null());
    EXPECT_GT(prompt_total(m["usage"]), 0);
    // A final assistant message is continued (a prefill): still one text block.
    json prefill = message_body("what is gold?");
    prefill["messages"].push_back({{"role", "assistant"}, {"content", "Gold is"}});
    const auto continued = post(s, "/v1/messages", prefill, headers);
    ASSERT_EQ(continued.status, 200) << continued.body;
    EXPECT_EQ(parse_or_null(continued.body)["content"][0]["type"], "text") << continued.body;
    // Without the key: 401.
    const auto refused = post(s, "/v1/messages", message_body("what is gold?"));
    EXPECT_EQ(refused.status, 401) << refused.body;
}

TEST(ServerAnthropic, StreamFollowsAnthropicsEventOrder) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json body = message_body("tell me about silver", 8);
    const json whole = parse_or_null(post(s, "/v1/messages", body).body);
    json streamed_body = body;
    streamed_body["stream"] = true;
    const auto r = post(s, "/v1/messages", streamed_body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.at("content-type").rfind("text/event-stream", 0), 0u);
    const auto events = named_events(r.body);
    ASSERT_GE(events.size(), 6u) << r.body;
    EXPECT_EQ(events[0].first, "message_start");
    EXPECT_EQ(events[1].first, "content_block_start");
    EXPECT_EQ(events[2].first, "ping");
    std::string text;
    size_t i = 3;
    for (; i < events.size() && events[i].first == "content_block_delta"; ++i) {
        EXPECT_EQ(events[i].second["delta"]["type"], "text_delta");
        text += events[i].second["delta"]["text"].get<std::string>();
    }
    ASSERT_EQ(events.size(), i + 3) << r.body;
    EXPECT_EQ(events[i].first, "content_block_stop");
    EXPECT_EQ(events[i + 1].first, "message_delta");
    EXPECT_EQ(events[i + 2].first, "message_stop");
    for (const auto& [name, data] : events) EXPECT_EQ(data["type"], name) << data;
    // Temperature 0: the stream says what the whole message said.
    EXPECT_EQ(text, whole["content"][0]["text"]) << r.body;
    EXPECT_EQ(events[i + 1].second["delta"]["stop_reason"], whole["stop_reason"]);
    EXPECT_EQ(events[i + 1].second["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
    EXPECT_EQ(events[0].second["message"]["model"], "claude-test");
    EXPECT_EQ(events[0].second["message"]["usage"]["input_tokens"], prompt_total(whole["usage"])) << r.body;
    EXPECT_EQ(prompt_total(events[i + 1].second["usage"]), prompt_total(whole["usage"])) << r.body;
}

// Document blocks are cached documents: the same documents in another order are cache hits.
TEST(ServerAnthropic, DocumentsInAnotherOrderHitTheCache) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json a = document("the quick brown fox jumps over the lazy dog and runs far away", "Fox");
    const json b = document("a stitch in time saves nine and then some more stitches after");
    const json question = {{"type", "text"}, {"text", "which animal?"}};
    const auto first = post(s, "/v1/messages", message_body({a, b, question}, 3, {{"system", "answer briefly"}}));
    ASSERT_EQ(first.status, 200) << first.body;
    const json u1 = parse_or_null(first.body)["usage"];
    EXPECT_GT(u1["cache_creation_input_tokens"].get<int64_t>(), 0) << u1;
    const auto second = post(s, "/v1/messages", message_body({b, a, question}, 3, {{"system", "answer briefly"}}));
    ASSERT_EQ(second.status, 200) << second.body;
    const json u2 = parse_or_null(second.body)["usage"];
    EXPECT_EQ(u2["cache_creation_input_tokens"], 0) << u2;
    EXPECT_GE(u2["cache_read_input_tokens"].get<int64_t>(), u1["cache_creation_input_tokens"].get<int64_t>()) << u2;
    EXPECT_EQ(prompt_total(u1), prompt_total(u2));
    // The same documents through chat completions' `documents` are the same cached segments.
    const json chat = {
        {"max_tokens", 2},
        {"messages",
         {{{"role", "system"}, {"content", "answer briefly"}}, {{"role", "user"}, {"content", "which animal?"}}}},
        {"documents", {{{"title", "Fox"}, {"text", a["source"]["data"]}}, {{"text", b["source"]["data"]}}}}};
    const auto c = curl("POST", s.url("/v1/chat/completions"), chat.dump());
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_GE(parse_or_null(c.body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(),
              u1["cache_creation_input_tokens"].get<int64_t>())
        << c.body;
}

TEST(ServerAnthropic, StopSequenceEndsTheMessage) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json free_run = parse_or_null(post(s, "/v1/messages", message_body("count for me", 12)).body);
    const std::string text = free_run["content"][0]["text"];
    if (text.size() < 4) GTEST_SKIP() << "the model ended early: " << free_run;
    // A stop sequence taken from inside the answer ends it there (text before it, not after).
    const std::string stop = text.substr(2, 1);
    const json stopped =
        parse_or_null(post(s, "/v1/messages", message_body("count for me", 12, {{"stop_sequences", {stop}}})).body);
    EXPECT_EQ(stopped["stop_reason"], "stop_sequence") << stopped;
    EXPECT_EQ(stopped["stop_sequence"], stop) << stopped;
    EXPECT_EQ(stopped["content"][0]["text"], text.substr(0, text.find(stop))) << stopped;
    json streamed = message_body("count for me", 12, {{"stop_sequences", {stop}}, {"stream", true}});
    const auto events = named_events(post(s, "/v1/messages", streamed).body);
    ASSERT_GE(events.size(), 3u);
    const json delta = events[events.size() - 2].second;
    EXPECT_EQ(delta["delta"]["stop_reason"], "stop_sequence") << delta;
    EXPECT_EQ(delta["delta"]["stop_sequence"], stop) << delta;
}

TEST(ServerAnthropic, CountTokensMatchesTheMessagesPrompt) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json body = message_body({document("gold is a metal", "Gold"), {{"type", "text"}, {"text", "what is it?"}}},
                                   2, {{"system", "be brief"}});
    const auto counted = post(s, "/v1/messages/count_tokens", body);
    ASSERT_EQ(counted.status, 200) << counted.body;
    const json c = parse_or_null(counted.body);
    ASSERT_TRUE(c["input_tokens"].is_number_integer()) << c;
    const json m = parse_or_null(post(s, "/v1/messages", body).body);
    EXPECT_EQ(c["input_tokens"].get<int64_t>(), prompt_total(m["usage"])) << m;
    json no_max = body;
    no_max.erase("max_tokens");
    EXPECT_EQ(post(s, "/v1/messages/count_tokens", no_max).status, 200);
    expect_anthropic_error(post(s, "/v1/messages/count_tokens", json{{"model", "m"}}), 400, "invalid_request_error",
                           "messages");
    EXPECT_TRUE(wait_blocks_released(s));
}

TEST(ServerAnthropic, BadInputIsA400InAnthropicsShape) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    json no_max = message_body("hi");
    no_max.erase("max_tokens");
    expect_anthropic_error(post(s, "/v1/messages", no_max), 400, "invalid_request_error", "max_tokens");
    expect_anthropic_error(post(s, "/v1/messages", message_body(json::array({{{"type", "image"}}}))), 400,
                           "invalid_request_error", "images are not served");
    expect_anthropic_error(post(s, "/v1/messages", message_body("hi", 4, {{"tools", {{{"name", "f"}}}}})), 400,
                           "invalid_request_error", "tools");
    expect_anthropic_error(post(s, "/v1/messages", message_body("hi", 4, {{"temperature", 1.5}})), 400,
                           "invalid_request_error", "temperature");
    expect_anthropic_error(post(s, "/v1/messages", message_body("hi", 4, {{"bogus", 1}})), 400, "invalid_request_error",
                           "bogus");
    expect_anthropic_error(curl("POST", s.url("/v1/messages"), "{not json", kHeaders), 400, "invalid_request_error");
    // A document named by id that is not cached: the front's error, in this API's shape.
    expect_anthropic_error(post(s, "/v1/messages", message_body("hi", 4, {{"documents", {{{"id", "nope"}}}}})), 400,
                           "invalid_request_error");
    // Past the context: a 400 naming the messages.
    const json huge = message_body(std::string(200000, 'x') + " y");
    expect_anthropic_error(post(s, "/v1/messages", huge), 400, "invalid_request_error");
    expect_still_serving(s);
}

}  // namespace
}  // namespace lazyattn::testing
