// Every way a request can be refused, one test each, against a real `lazyattn serve`: the status,
// an OpenAI error body ({"error": {"message", "type", "param", "code"}}), and a server that keeps
// serving with no KV block left behind.
#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using json = nlohmann::json;

// Sends `body` to the route, expects the error, then checks the server is unaffected.
void expect_refused(const std::string& route, const std::string& body, int status, const std::string& code,
                    const std::string& param = "", const std::vector<std::string>& flags = {}) {
    ServerProcess s(server_args(flags));
    ASSERT_TRUE(s.started()) << s.log();
    auto r = curl("POST", s.url(route), body);
    expect_api_error(r, status, code);
    if (!param.empty()) {
        EXPECT_EQ(parse_or_null(r.body)["error"]["param"], param) << r.body;
    }
    expect_still_serving(s);
}

TEST(ServerErrors, MalformedJsonIs400) {
    expect_refused("/v1/chat/completions", "{\"messages\": [", 400, "invalid_json");
}

TEST(ServerErrors, NonObjectBodyIs400) { expect_refused("/v1/completions", "[1, 2]", 400, "invalid_type"); }

TEST(ServerErrors, WrongTypeIs400) {
    expect_refused("/v1/completions", completion_body(false, {{"temperature", "hot"}}), 400, "invalid_type",
                   "temperature");
    expect_refused("/v1/chat/completions", json({{"messages", "hello"}}).dump(), 400, "invalid_type", "messages");
    expect_refused("/v1/completions", completion_body(false, {{"stop", 5}}), 400, "invalid_type", "stop");
}

TEST(ServerErrors, NegativeTemperatureIs400) {
    expect_refused("/v1/completions", completion_body(false, {{"temperature", -1}}), 400, "invalid_value",
                   "temperature");
}

TEST(ServerErrors, NegativeMaxTokensIs400) {
    expect_refused("/v1/chat/completions", completion_body(true, {{"max_tokens", -5}}), 400, "invalid_value",
                   "max_tokens");
}

TEST(ServerErrors, TopPAboveOneIs400) {
    expect_refused("/v1/completions", completion_body(false, {{"top_p", 2}}), 400, "invalid_value", "top_p");
}

TEST(ServerErrors, TooManyChoicesIs400) {
    expect_refused("/v1/completions", completion_body(false, {{"n", 17}}), 400, "invalid_value", "n");
}

TEST(ServerErrors, PenaltyOutOfRangeIs400) {
    expect_refused("/v1/chat/completions", completion_body(true, {{"presence_penalty", 2.5}}), 400, "invalid_value",
                   "presence_penalty");
}

TEST(ServerErrors, UnknownModelIs404UnderStrictModelName) {
    expect_refused("/v1/chat/completions", completion_body(true, {{"model", "gpt-17"}}), 404, "model_not_found",
                   "model", {"--strict-model-name"});
}

// By default, as llama-server: a client's default model name (LangChain sends "gpt-3.5-turbo")
// is answered by the one model served, and the response names that model.
TEST(ServerErrors, AnotherModelNameIsAnsweredByTheServedModelByDefault) {
    ServerProcess s(server_args({"--served-model-name", "rag-model"}));
    ASSERT_TRUE(s.started()) << s.log();
    const auto r = curl("POST", s.url("/v1/chat/completions"), completion_body(true, {{"model", "gpt-3.5-turbo"}}));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(parse_or_null(r.body)["model"], "rag-model") << r.body;
}

TEST(ServerErrors, EmptyMessagesIs400) {
    expect_refused("/v1/chat/completions", json({{"messages", json::array()}}).dump(), 400, "invalid_value",
                   "messages");
}

TEST(ServerErrors, EmptyPromptIs400) {
    expect_refused("/v1/completions", json({{"prompt", ""}}).dump(), 400, "invalid_value", "prompt");
}

TEST(ServerErrors, InvalidUtf8Is400) {
    const std::string body = "{\"prompt\": \"caf\xC3\x28 \xFF\", \"max_tokens\": 2}";
    expect_refused("/v1/completions", body, 400, "invalid_utf8");
}

TEST(ServerErrors, UnknownDocumentIdIs400) {
    expect_refused("/v1/completions", completion_body(false, {{"documents", {{{"id", "0123456789abcdef"}}}}}), 400,
                   "document_not_found", "documents");
}

TEST(ServerErrors, BadDocumentEntryIs400) {
    expect_refused("/v1/chat/completions", completion_body(true, {{"documents", {42}}}), 400, "invalid_type",
                   "documents[0]");
}

TEST(ServerErrors, PromptOverTheContextLengthIs400) {
    std::string long_prompt;
    for (int i = 0; i < 3000; ++i) long_prompt += "lorem ipsum ";
    expect_refused("/v1/completions", json({{"prompt", long_prompt}, {"max_tokens", 1}}).dump(), 400,
                   "context_length_exceeded", "prompt");
    // Documents count toward the context too.
    expect_refused("/v1/chat/completions", completion_body(true, {{"documents", {long_prompt}}}), 400,
                   "context_length_exceeded", "messages");
}

TEST(ServerErrors, RequestLargerThanTheKvPoolIs400) {
    ServerProcess s(server_args({"--kv-blocks", "8"}));  // 128 tokens of KV
    ASSERT_TRUE(s.started()) << s.log();
    auto r = curl("POST", s.url("/v1/completions"), completion_body(false, json::object(), 300));
    expect_api_error(r, 400, "kv_pool_exceeded");
    EXPECT_NE(r.body.find("KV blocks"), std::string::npos) << r.body;  // the engine's message
    expect_still_serving(s);
}

TEST(ServerErrors, BodyOverTheLimitIs413) {
    ServerProcess s(server_args({"--max-body-bytes", "2000"}));
    ASSERT_TRUE(s.started()) << s.log();
    auto r = curl("POST", s.url("/v1/completions"), json({{"prompt", std::string(5000, 'a')}}).dump());
    expect_api_error(r, 413, "request_too_large");
    expect_still_serving(s);
}

TEST(ServerErrors, FullQueueIs429WithRetryAfter) {
    ServerProcess s(server_args({"--max-num-seqs", "1", "--max-queue", "1"}));
    ASSERT_TRUE(s.started()) << s.log();
    // One long request runs, a second waits in the queue, the third is turned away.
    RawHttpStream running(s.port(), "POST", "/v1/completions",
                          completion_body(false, {{"stream", true}, {"ignore_eos", true}}, 3000));
    ASSERT_TRUE(running.read_until("data: ", 10));
    RawHttpStream queued(s.port(), "POST", "/v1/completions", completion_body(false, json::object(), 2));
    bool waiting = false;
    for (int i = 0; i < 200 && !waiting; ++i) {
        waiting = metric_value(metrics_text(s), "lazyattn_num_requests_waiting") == 1;
        if (!waiting) usleep(10 * 1000);
    }
    ASSERT_TRUE(waiting) << metrics_text(s);
    auto r = curl("POST", s.url("/v1/completions"), completion_body(false));
    expect_api_error(r, 429, "queue_full");
    EXPECT_EQ(r.headers["retry-after"], "1");
    running.close();  // cancels the long one; the queued one then runs
    queued.read_to_end(10);
    EXPECT_NE(queued.received().find("200 OK"), std::string::npos) << queued.received();
    expect_still_serving(s);
}

TEST(ServerErrors, ShuttingDownIs503) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    RawHttpStream running(s.port(), "POST", "/v1/completions",
                          completion_body(false, {{"stream", true}, {"ignore_eos", true}}, 3000));
    ASSERT_TRUE(running.read_until("data: ", 10));
    s.send_signal(SIGTERM);
    // The signal is handled asynchronously: ask until the server answers as draining (bounded).
    auto reply = curl("POST", s.url("/v1/completions"), completion_body(false));
    for (int i = 0; i < 100 && reply.status != 503; ++i) {
        usleep(50 * 1000);
        reply = curl("POST", s.url("/v1/completions"), completion_body(false));
    }
    expect_api_error(reply, 503, "shutting_down");
    running.read_to_end(20);
    EXPECT_EQ(s.wait_exit(20), 0) << s.log();
}

}  // namespace
}  // namespace lazyattn::testing
