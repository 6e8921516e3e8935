// The server's lifecycle over real sockets: a client that leaves mid-stream cancels its request
// and its KV blocks return to the pool; SIGTERM lets in-flight requests finish (or cancels them
// after --shutdown-timeout) and exits 0; and one run on the real model when it is installed.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using json = nlohmann::json;

std::string long_stream_body(int max_tokens) {
    return completion_body(
        false, {{"stream", true}, {"ignore_eos", true}, {"documents", {"a document to hold blocks"}}}, max_tokens);
}

TEST(ServerLifecycle, ClientDisconnectCancelsTheRequestAndFreesItsBlocks) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    RawHttpStream stream(s.port(), "POST", "/v1/completions", long_stream_body(4000));
    ASSERT_TRUE(stream.read_until("data: {", 10)) << stream.received();
    ASSERT_TRUE(stream.read_until("}\n\ndata: {", 10));  // a couple of chunks arrived
    EXPECT_GT(metric_value(metrics_text(s), "lazyattn_kv_blocks_used"), 0);
    stream.close();
    EXPECT_TRUE(wait_blocks_released(s, 5)) << metrics_text(s);
    const std::string m = metrics_text(s);
    EXPECT_EQ(metric_value(m, "lazyattn_request_success_total{finished_reason=\"abort\"}"), 1) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_client_disconnects_total"), 1) << m;
    EXPECT_LT(metric_value(m, "lazyattn_generation_tokens_total"), 4000) << m;
    expect_still_serving(s);
}

TEST(ServerLifecycle, SigtermLetsInFlightRequestsFinishAndExitsZero) {
    ServerProcess s(server_args({"--shutdown-timeout", "30"}));
    ASSERT_TRUE(s.started()) << s.log();
    RawHttpStream stream(s.port(), "POST", "/v1/completions", long_stream_body(1000));
    ASSERT_TRUE(stream.read_until("data: {", 10));
    s.send_signal(SIGTERM);
    stream.read_to_end(30);
    const std::string& got = stream.received();
    EXPECT_NE(got.find("\"finish_reason\":\"length\""), std::string::npos) << got.substr(0, 500);
    EXPECT_NE(got.find("data: [DONE]"), std::string::npos);
    EXPECT_EQ(s.wait_exit(20), 0) << s.log();
}

TEST(ServerLifecycle, SigtermCancelsWhatOutlivesTheTimeoutAndExitsZero) {
    ServerProcess s(server_args({"--shutdown-timeout", "0"}));  // nothing may outlive it
    ASSERT_TRUE(s.started()) << s.log();
    RawHttpStream stream(s.port(), "POST", "/v1/completions", long_stream_body(4000));
    ASSERT_TRUE(stream.read_until("data: {", 10));
    s.send_signal(SIGINT);
    stream.read_to_end(30);
    const std::string& got = stream.received();
    EXPECT_NE(got.find("\"code\":\"cancelled\""), std::string::npos)
        << got.substr(got.size() > 800 ? got.size() - 800 : 0);
    EXPECT_NE(got.find("data: [DONE]"), std::string::npos);
    EXPECT_EQ(s.wait_exit(20), 0) << s.log();
}

TEST(ServerLifecycle, RealModelAnswersFromDocumentsAndReusesThem) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) {
        GTEST_SKIP() << "real model not found at " LAZYATTN_MODEL_PATH " (run make test to install)";
    }
    ServerProcess s({"--model", LAZYATTN_MODEL_PATH, "--kv-cache-mb", "64", "--threads", "2"});
    ASSERT_TRUE(s.started()) << s.log();
    json docs = {{{"title", "Nairobi"}, {"text", "Nairobi is the capital and largest city of Kenya."}},
                 {{"title", "Lima"}, {"text", "Lima is the capital and largest city of Peru."}}};
    auto ask = [&](const json& d) {
        json body = {{"model", "SmolLM2-135M-Instruct.Q4_1.gguf"},
                     {"messages", {{{"role", "user"}, {"content", "What is the capital of Kenya?"}}}},
                     {"documents", d},
                     {"max_tokens", 12},
                     {"temperature", 0}};
        return parse_or_null(curl("POST", s.url("/v1/chat/completions"), body.dump()).body);
    };
    auto first = ask(docs);
    ASSERT_TRUE(first.contains("choices")) << first;
    EXPECT_NE(first["choices"][0]["message"]["content"].get<std::string>().find("Nairobi"), std::string::npos) << first;
    std::swap(docs[0], docs[1]);
    auto second = ask(docs);
    EXPECT_GT(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
              second["usage"]["prompt_tokens"].get<int>() / 2)
        << second;
    EXPECT_TRUE(wait_blocks_released(s));
}

}  // namespace
}  // namespace lazyattn::testing
