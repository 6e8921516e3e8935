// Safe to expose, third round (the issue of that name): what a client could make the server
// spend per byte it sends, over a real socket against a real `lazyattn serve`. Each case answers
// a clear error quickly and leaves the server serving everyone else.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include <fstream>
#include <string>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

const std::vector<std::string> kDocs = {"the quick brown fox jumps over the lazy dog",
                                        "a stitch in time saves nine and then some more",
                                        "all that glitters is not gold, said the old man"};

// The server's resident set now and at its peak (kB, /proc/PID/status).
std::pair<int64_t, int64_t> resident_kb(const ServerProcess& s) {
    std::ifstream in("/proc/" + std::to_string(s.pid()) + "/status");
    int64_t now = -1, peak = -1;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmRSS:", 0) == 0) now = std::stoll(line.substr(6));
        if (line.rfind("VmHWM:", 0) == 0) peak = std::stoll(line.substr(6));
    }
    return {now, peak};
}

std::string error_message(const HttpResult& r) {
    const json j = parse_or_null(r.body);
    return j.is_object() && j.contains("error") ? j["error"]["message"].get<std::string>() : "";
}

// PCRE2's match limit restarts at every start position: `(a+)+$` over 32,000 runs of 16 a's
// (544 KB) cost ~100 s of CPU before its 400. One step budget per request answers within it
// (the message says which bound; no time is asserted).
TEST(ServerSecurity3, ACatastrophicDelimiterIsRefusedWithinOneRequestsBudget) {
    ServerProcess s(server_args({}, 131072));
    ASSERT_TRUE(s.started()) << s.log();
    std::string text;
    for (int i = 0; i < 32000; ++i) text += std::string(16, 'a') + "!";
    const json body = {{"messages", {{{"role", "user"}, {"content", text}}}},
                       {"max_tokens", 1},
                       {"documents_from", {{"source", "delimiter"}, {"delimiter", "regex:(a+)+$"}}}};
    const auto r = curl("POST", s.url("/v1/chat/completions"), body.dump());
    expect_api_error(r, 400, "invalid_value");
    EXPECT_NE(error_message(r).find("matching steps one request may spend"), std::string::npos) << r.body;
    expect_still_serving(s);
}

// 300,000 content parts of {"type":"text","text":"x"} (8.1 MB) took +188 MB before the document
// limit refused them; the list is refused while it is parsed, and a body of tiny objects anywhere
// else stops at the parse's cost bound.
TEST(ServerSecurity3, ManyTinyObjectsAreRefusedWhileParsing) {
    ServerProcess s(server_args({"--max-body-bytes", "16777216"}));
    ASSERT_TRUE(s.started()) << s.log();
    const auto [rss_before, peak_before] = resident_kb(s);
    std::string parts;
    for (int i = 0; i < 300000; ++i) parts += std::string(i ? "," : "") + R"({"type":"text","text":"x"})";
    const std::string body = R"({"max_tokens":1,"messages":[{"role":"user","content":[)" + parts + "]}]}";
    auto r = curl("POST", s.url("/v1/chat/completions"), body);
    expect_api_error(r, 400, "json_too_large");
    EXPECT_NE(error_message(r).find("'content' list holds more than 257 items"), std::string::npos) << r.body;

    std::string objects;
    for (int i = 0; i < 300000; ++i) objects += std::string(i ? "," : "") + R"({"a":"x"})";
    r = curl("POST", s.url("/v1/completions"), R"({"prompt":"a","max_tokens":1,"user":[)" + objects + "]}");
    expect_api_error(r, 400, "json_too_large");
    const auto [rss_after, peak_after] = resident_kb(s);
    ASSERT_GT(peak_before, 0);
    // The bodies themselves are ~8 MB each (buffered, then parsed up to 3x + 1 MiB).
    EXPECT_LT(peak_after - peak_before, 64 * 1024) << "peak resident set grew by " << peak_after - peak_before << " kB";
    EXPECT_LT(rss_after - rss_before, 48 * 1024) << "resident set kept " << rss_after - rss_before << " kB";
    expect_still_serving(s);
}

// The lows: an id is quoted, not echoed whole; a share too small to mean anything is refused
// naming it (also with a measured selection); a part with a null id is not empty text.
TEST(ServerSecurity3, HostileFieldValuesGetShortPreciseErrors) {
    ServerProcess s(server_args({"--strict-model-name"}));  // so that a wrong model name is an error
    ASSERT_TRUE(s.started()) << s.log();
    const std::string huge_id(1 << 20, 'i');
    auto r = curl("POST", s.url("/v1/completions"),
                  json{{"prompt", "q"}, {"max_tokens", 1}, {"documents", {{{"id", huge_id}}}}}.dump());
    EXPECT_EQ(r.status, 400) << r.body.substr(0, 300);
    EXPECT_LT(r.body.size(), 1024u);
    EXPECT_NE(r.body.find("(1048576 bytes)"), std::string::npos) << r.body;
    r = curl("POST", s.url("/v1/completions"), json{{"prompt", "q"}, {"max_tokens", 1}, {"model", huge_id}}.dump());
    EXPECT_EQ(r.status, 404);
    EXPECT_LT(r.body.size(), 1024u);

    for (const json& recompute : {json{{"share", 1e-300}}, json{{"share", 1e-300}, {"select", "query"}}}) {
        r = curl("POST", s.url("/v1/chat/completions"),
                 completion_body(true, {{"documents", kDocs}, {"document_reuse", {{"recompute", recompute}}}}));
        expect_api_error(r, 400, "invalid_value");
        EXPECT_EQ(parse_or_null(r.body)["error"]["param"], "document_reuse.recompute.share") << r.body;
    }
    r = curl("POST", s.url("/v1/chat/completions"),
             completion_body(true, {{"document_reuse", "recompute=0.000001%"}, {"documents", kDocs}}));
    expect_api_error(r, 400, "invalid_value");
    // Damped document sinks: a bias that would amplify the sinks is refused naming its field.
    r = curl(
        "POST", s.url("/v1/chat/completions"),
        completion_body(true, {{"documents", kDocs}, {"document_reuse", {{"damp", {{"tokens", 16}, {"bias", 3}}}}}}));
    expect_api_error(r, 400, "invalid_value");
    EXPECT_EQ(parse_or_null(r.body)["error"]["param"], "document_reuse.damp.bias") << r.body;
    r = curl("POST", s.url("/v1/chat/completions"),
             completion_body(true, {{"document_reuse", "damp=16:-2+recompute=15%"}, {"documents", kDocs}}));
    expect_api_error(r, 400, "invalid_value");

    const json null_id = {
        {"max_tokens", 1},
        {"documents_from", "parts"},
        {"messages",
         {{{"role", "user"}, {"content", {{{"type", "text"}, {"id", nullptr}}, {{"type", "text"}, {"text", "q?"}}}}}}}};
    r = curl("POST", s.url("/v1/chat/completions"), null_id.dump());
    expect_api_error(r, 400, "invalid_type");
    EXPECT_EQ(parse_or_null(r.body)["error"]["param"], "messages[0].content[0].id") << r.body;
    expect_still_serving(s);
}

// recompute with n > 1 recomputed the rows once per choice (n=8: 8x the prefill, billed as one
// prompt). The choices now share one computation of the rows, answer as n=1 does, and usage says
// what ran (computed_tokens and recomputed_tokens over every choice).
TEST(ServerSecurity3, TheChoicesOfARecomputingRequestRecomputeOnce) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    auto usage = [&](int n) {
        const json body = {{"prompt", "which proverb?"},
                           {"max_tokens", 4},
                           {"temperature", 0},
                           {"ignore_eos", true},
                           {"n", n},
                           {"cache_salt", "n" + std::to_string(n)},  // nothing cached from the other
                           {"documents", kDocs},
                           {"document_reuse", {{"recompute", {{"share", 1.0}}}}}};
        const auto r = curl("POST", s.url("/v1/completions"), body.dump());
        EXPECT_EQ(r.status, 200) << r.body;
        return parse_or_null(r.body);
    };
    const json one_body = usage(1), three_body = usage(3);
    const json &one = one_body["usage"], &three = three_body["usage"];
    for (const json& choice : three_body["choices"]) EXPECT_EQ(choice["text"], one_body["choices"][0]["text"]);
    ASSERT_TRUE(one["prompt_tokens_details"].contains("recomputed_tokens")) << one;
    const int rows = one["prompt_tokens_details"]["recomputed_tokens"];
    EXPECT_GT(rows, 20) << one;
    EXPECT_EQ(three["prompt_tokens"], one["prompt_tokens"]) << three;
    EXPECT_EQ(three["prompt_tokens_details"]["recomputed_tokens"], rows) << three;
    // Each choice still prefills its own question; the documents and the rows ran once.
    const int question = one["prompt_tokens_details"]["computed_tokens"].get<int>() - rows -
                         one["prompt_tokens_details"]["document_tokens"].get<int>();
    EXPECT_EQ(three["prompt_tokens_details"]["computed_tokens"],
              one["prompt_tokens_details"]["computed_tokens"].get<int>() + 2 * question)
        << one << three;
}

// A Redis that hangs: a loopback port whose connections the kernel completes (the backlog) and
// nobody ever reads or answers, as a stopped or wedged server looks to a client.
class HungPeer {
public:
    HungPeer() {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 64) != 0 ||
            getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
            ADD_FAILURE() << "cannot listen on loopback";
        }
        port_ = ntohs(a.sin_port);
    }
    ~HungPeer() { close(fd_); }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

private:
    int fd_ = -1;
    int port_ = 0;
};

// SIGTERM with store writes queued to a Redis that hangs: the writer drained the whole queue, each
// write blocking for the 5 s write timeout (13 s with --shutdown-timeout 2). It now gets a short
// drain, then the write in flight is cut and the rest dropped (counted and logged).
TEST(ServerSecurity3, SigtermDoesNotWaitOnAHungRedis) {
    HungPeer redis;
    ServerProcess s(server_args({"--kv-store", redis.url(), "--shutdown-timeout", "2"}));
    ASSERT_TRUE(s.started()) << s.log();
    for (int i = 0; i < 6; ++i) {  // six new documents: six writes for the hung tier
        const json body = {{"prompt", "q"},
                           {"max_tokens", 1},
                           {"documents", {"a document that is written to the store, number " + std::to_string(i)}}};
        EXPECT_EQ(curl("POST", s.url("/v1/completions"), body.dump()).status, 200);
    }
    const auto t0 = std::chrono::steady_clock::now();
    s.send_signal(SIGTERM);
    // Nothing is in flight, so the bound is the store's drain (about 1 s), far from a 5 s write.
    EXPECT_EQ(s.wait_exit(4.0), 0) << s.log();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 4.0) << s.log();
}

}  // namespace
}  // namespace lazyattn::testing
