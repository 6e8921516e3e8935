// Hostile and careless clients against a real `lazyattn serve` over loopback: every case the
// security review found (issue "Safe to expose") answers with a clear error, and the server
// keeps serving everyone else afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compress_util.h"
#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

// The status code of the first response in raw bytes received ("HTTP/1.1 413 ..."), 0 if none.
int first_status(const std::string& raw) {
    if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || raw.size() < 12) return 0;
    return std::atoi(raw.substr(9, 3).c_str());
}

std::string nested(const std::string& open, const std::string& close, int depth, const std::string& inner) {
    std::string s;
    for (int i = 0; i < depth; ++i) s += open;
    s += inner;
    for (int i = 0; i < depth; ++i) s += close;
    return s;
}

TEST(ServerSecurity, DeeplyNestedJsonIs400NotACrash) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    for (const char* field : {"stop", "prompt", "messages", "documents"}) {
        const std::string body = std::string("{\"") + field + "\": " + nested("[", "]", 100000, "\"x\"") + "}";
        const bool chat = std::string(field) == "messages";
        auto r = curl("POST", s.url(chat ? "/v1/chat/completions" : "/v1/completions"), body);
        expect_api_error(r, 400, "json_too_deep");
    }
    auto r = curl("POST", s.url("/v1/completions"),
                  "{\"prompt\": \"a\", \"x\": " + nested("{\"a\":", "}", 50000, "1") + "}");
    expect_api_error(r, 400, "json_too_deep");
    expect_still_serving(s);
}

TEST(ServerSecurity, NumbersNoDoubleHoldsAre400) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    expect_api_error(curl("POST", s.url("/v1/completions"), R"({"prompt": "a", "temperature": 1e999})"), 400,
                     "invalid_json");
    expect_api_error(curl("POST", s.url("/v1/completions"), R"({"prompt": "a", "max_tokens": 1e400})"), 400,
                     "invalid_json");
    expect_still_serving(s);
}

TEST(ServerSecurity, ChunkedAndCompressedBodiesAreCappedAfterDecoding) {
    ServerProcess s(server_args({"--max-body-bytes", "65536"}));
    ASSERT_TRUE(s.started()) << s.log();
    {  // chunked, no Content-Length: refused once the running size passes the cap
        RawHttpStream c(s.port(),
                        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n");
        const std::string chunk = std::string("4000\r\n") + std::string(0x4000, ' ') + "\r\n";
        for (int i = 0; i < 8 && c.send(chunk); ++i) {
        }
        c.read_until("\r\n\r\n", 10);
        EXPECT_EQ(first_status(c.received()), 413) << c.received();
        EXPECT_NE(c.received().find("request_too_large"), std::string::npos);
    }
    {  // a gzip body of a few KB that inflates to 50 MB
        const std::string bomb = gzip("{\"prompt\": \"" + std::string(50 << 20, 'a') + "\"}");
        ASSERT_LT(bomb.size(), 65536u);
        RawHttpStream c(s.port(),
                        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Content-Encoding: gzip\r\nContent-Length: " +
                            std::to_string(bomb.size()) + "\r\n\r\n" + bomb);
        c.read_until("\r\n\r\n", 10);
        EXPECT_EQ(first_status(c.received()), 413) << c.received();
    }
    {  // a compressed body within the cap is decoded and served
        const std::string body = gzip(completion_body(false));
        RawHttpStream c(s.port(),
                        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Content-Encoding: gzip\r\nConnection: close\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body);
        c.read_to_end(30);
        EXPECT_EQ(first_status(c.received()), 200) << c.received();
    }
    expect_still_serving(s);
}

TEST(ServerSecurity, AHugePromptIsRefusedBeforeTokenizing) {
    ServerProcess s(server_args({"--max-body-bytes", std::to_string(16 << 20)}, 512));
    ASSERT_TRUE(s.started()) << s.log();
    const std::string body = json{{"prompt", std::string(8 << 20, 'a')}, {"max_tokens", 1}}.dump();
    auto r = curl("POST", s.url("/v1/completions"), body);
    expect_api_error(r, 400, "context_length_exceeded");
    EXPECT_NE(r.body.find("bytes) cannot fit"), std::string::npos) << r.body;  // the pre-check, not the tokenizer
    expect_still_serving(s);
}

TEST(ServerSecurity, HeaderAbuseIs431WithACode) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    auto r = curl("GET", s.url("/health"), "", {"-H", "'X-Big: " + std::string(20000, 'v') + "'"});
    expect_api_error(r, 431, "request_header_fields_too_large");
    std::string many = "GET /health HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 100000 && many.size() < 15000; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
    RawHttpStream c(s.port(), many + "\r\n");
    c.read_until("\r\n\r\n", 10);
    EXPECT_EQ(first_status(c.received()), 431) << c.received();
    expect_still_serving(s);
}

TEST(ServerSecurity, NonJsonContentTypesAre415) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
        auto r = curl("POST", s.url("/v1/completions"), completion_body(false),
                      {"-H", std::string("'Content-Type: ") + type + "'"});
        expect_api_error(r, 415, "unsupported_media_type");
    }
    auto r = curl("POST", s.url("/v1/completions"), completion_body(false),
                  {"-H", "'Content-Type: application/json; charset=utf-8'"});
    EXPECT_EQ(r.status, 200) << r.body;
}

TEST(ServerSecurity, PipelinedRequestsAreAllAnswered) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const std::string body = completion_body(false);
    const std::string one =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    RawHttpStream c(s.port(), one + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + one +
                                  "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    c.read_to_end(30);
    size_t count = 0;
    for (size_t at = c.received().find("HTTP/1.1 200"); at != std::string::npos;
         at = c.received().find("HTTP/1.1 200", at + 1))
        ++count;
    EXPECT_EQ(count, 4u) << c.received();
}

TEST(ServerSecurity, SlowClientsHoldNoWorkerAndTimeOut) {
    ServerProcess s(server_args({"--http-threads", "4", "--header-timeout", "2", "--request-timeout", "4",
                                 "--max-connections-per-client", "400"}));
    ASSERT_TRUE(s.started()) << s.log();
    // 128 connections that never finish their headers, and 16 that never finish their bodies.
    std::vector<std::unique_ptr<RawHttpStream>> slow;
    for (int i = 0; i < 128; ++i)
        slow.push_back(std::make_unique<RawHttpStream>(s.port(), "GET /health HTTP/1.1\r\nHost: x\r\nX-A: "));
    for (int i = 0; i < 16; ++i) {
        slow.push_back(std::make_unique<RawHttpStream>(s.port(),
                                                       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                                       "application/json\r\nContent-Length: 100\r\n\r\n{"));
    }
    // Everyone else is still served at once, light and heavy routes alike.
    EXPECT_EQ(curl("GET", s.url("/health")).status, 200);
    EXPECT_EQ(curl("GET", s.url("/metrics")).status, 200);
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), completion_body(false)).status, 200);
    // The header deadline, then the request deadline, answer 408 and close.
    ASSERT_TRUE(slow[0]->read_until("\r\n\r\n", 10));
    EXPECT_EQ(first_status(slow[0]->received()), 408) << slow[0]->received();
    ASSERT_TRUE(slow[130]->read_until("\r\n\r\n", 10));
    EXPECT_EQ(first_status(slow[130]->received()), 408) << slow[130]->received();
}

TEST(ServerSecurity, ConnectionsPerClientAreCapped) {
    ServerProcess s(server_args({"--max-connections-per-client", "4"}));
    ASSERT_TRUE(s.started()) << s.log();
    std::vector<std::unique_ptr<RawHttpStream>> held;
    for (int i = 0; i < 4; ++i) held.push_back(std::make_unique<RawHttpStream>(s.port(), "GET /hea"));
    usleep(200 * 1000);
    auto r = curl("GET", s.url("/health"));
    expect_api_error(r, 429, "too_many_connections");
    held.clear();
    for (int i = 0; i < 50; ++i) {
        if (curl("GET", s.url("/health")).status == 200) break;
        usleep(100 * 1000);
    }
    EXPECT_EQ(curl("GET", s.url("/health")).status, 200);
}

TEST(ServerSecurity, PinnedDocumentsCannotWedgeTheEngine) {
    ServerProcess s(server_args({"--kv-blocks", "96"}));
    ASSERT_TRUE(s.started()) << s.log();
    // Pin tiny documents until the server refuses: the pinned share of the pool is capped.
    int refused = 0, pinned = 0;
    for (int batch = 0; batch < 20 && refused == 0; ++batch) {
        json docs = json::array();
        for (int i = 0; i < 50; ++i) docs.push_back("document " + std::to_string(batch) + "-" + std::to_string(i));
        auto r = curl("POST", s.url("/v1/documents"), json{{"documents", docs}}.dump());
        if (r.status == 200) {
            pinned += 50;
        } else {
            expect_api_error(r, 429, "pin_quota_exceeded");
            ++refused;
        }
    }
    EXPECT_EQ(refused, 1) << "pinned " << pinned << " documents without a refusal";
    // Requests still run; one that can never fit what pinning left is refused at once.
    auto ok = curl("POST", s.url("/v1/completions"), completion_body(false));
    EXPECT_EQ(ok.status, 200) << ok.body;
    auto big = curl("POST", s.url("/v1/completions"),
                    json{{"prompt", "x"}, {"documents", {std::string(3000, 'q') + " end"}}, {"max_tokens", 4}}.dump());
    EXPECT_EQ(big.status, 400) << big.body;
    EXPECT_EQ(curl("GET", s.url("/health")).status, 200);
}

TEST(ServerSecurity, APerTenantPinQuotaRefusesOnlyThatTenant) {
    ServerProcess s(server_args({"--api-key", "alpha-key,beta-key", "--pin-quota-blocks", "2"}));
    ASSERT_TRUE(s.started()) << s.log();
    const std::vector<std::string> alpha = {"-H", "'Authorization: Bearer alpha-key'"};
    const std::vector<std::string> beta = {"-H", "'Authorization: Bearer beta-key'"};
    EXPECT_EQ(curl("POST", s.url("/v1/documents"), json{{"documents", {"one"}}}.dump(), alpha).status, 200);
    EXPECT_EQ(curl("POST", s.url("/v1/documents"), json{{"documents", {"two"}}}.dump(), alpha).status, 200);
    expect_api_error(curl("POST", s.url("/v1/documents"), json{{"documents", {"three"}}}.dump(), alpha), 429,
                     "pin_quota_exceeded");
    EXPECT_EQ(curl("POST", s.url("/v1/documents"), json{{"documents", {"three"}}}.dump(), beta).status, 200);
}

TEST(ServerSecurity, ApiKeysGuardEveryRouteButHealth) {
    ServerProcess s(server_args({"--api-key", "alpha-key,beta-key"}));
    ASSERT_TRUE(s.started()) << s.log();
    expect_api_error(curl("POST", s.url("/v1/completions"), completion_body(false)), 401, "invalid_api_key");
    expect_api_error(curl("GET", s.url("/v1/models")), 401, "invalid_api_key");
    expect_api_error(curl("GET", s.url("/metrics")), 401, "invalid_api_key");
    expect_api_error(curl("GET", s.url("/v1/models"), "", {"-H", "'Authorization: Bearer alpha-ke'"}), 401);
    expect_api_error(curl("GET", s.url("/v1/models"), "", {"-H", "'Authorization: Bearer alpha-keyy'"}), 401);
    EXPECT_EQ(curl("GET", s.url("/health")).status, 200);
    EXPECT_EQ(curl("GET", s.url("/v1/models"), "", {"-H", "'Authorization: Bearer alpha-key'"}).status, 200);
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), completion_body(false), {"-H", "'Authorization: Bearer beta-key'"})
                  .status,
              200);
}

TEST(ServerSecurity, TenantsSeeOnlyTheirOwnDocumentsAndPins) {
    ServerProcess s(server_args({"--api-key", "alpha-key,beta-key"}));
    ASSERT_TRUE(s.started()) << s.log();
    const std::vector<std::string> alpha = {"-H", "'Authorization: Bearer alpha-key'"};
    const std::vector<std::string> beta = {"-H", "'Authorization: Bearer beta-key'"};
    auto pin = curl("POST", s.url("/v1/documents"), json{{"documents", {"alpha's private notes"}}}.dump(), alpha);
    ASSERT_EQ(pin.status, 200) << pin.body;
    const std::string id = parse_or_null(pin.body)["data"][0]["id"];
    // A chat with a system prompt caches it, but it is never listed as a document.
    json chat = json::parse(completion_body(true));
    chat["messages"] = {{{"role", "system"}, {"content", "alpha's secret system prompt"}},
                        {{"role", "user"}, {"content", "hi"}}};
    ASSERT_EQ(curl("POST", s.url("/v1/chat/completions"), chat.dump(), alpha).status, 200);

    auto mine = parse_or_null(curl("GET", s.url("/v1/documents"), "", alpha).body);
    ASSERT_EQ(mine["data"].size(), 1u) << mine.dump();
    EXPECT_EQ(mine["data"][0]["id"], id);
    EXPECT_EQ(parse_or_null(curl("GET", s.url("/v1/documents"), "", beta).body)["data"].size(), 0u);
    // beta can neither use nor unpin alpha's document, even knowing its id.
    json by_id = json::parse(completion_body(false));
    by_id["documents"] = {{{"id", id}}};
    expect_api_error(curl("POST", s.url("/v1/completions"), by_id.dump(), beta), 400, "document_not_found");
    expect_api_error(curl("DELETE", s.url("/v1/documents/" + id), "", beta), 404);
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), by_id.dump(), alpha).status, 200);
    // Within a key, cache_salt splits tenants further.
    EXPECT_EQ(parse_or_null(curl("GET", s.url("/v1/documents?cache_salt=other"), "", alpha).body)["data"].size(), 0u);
    EXPECT_EQ(curl("DELETE", s.url("/v1/documents/" + id), "", alpha).status, 200);
    expect_api_error(curl("DELETE", s.url("/v1/documents/" + id), "", alpha), 404);
}

TEST(ServerSecurity, CacheSaltIsolatesKeylessClients) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    auto pin = curl("POST", s.url("/v1/documents"), json{{"documents", {"salted"}}, {"cache_salt", "s1"}}.dump());
    ASSERT_EQ(pin.status, 200) << pin.body;
    EXPECT_EQ(parse_or_null(curl("GET", s.url("/v1/documents")).body)["data"].size(), 0u);
    EXPECT_EQ(parse_or_null(curl("GET", s.url("/v1/documents?cache_salt=s1")).body)["data"].size(), 1u);
    // The same document text is a miss under another salt: cached tokens are not shared.
    json req = json::parse(completion_body(false));
    req["documents"] = {"salted"};
    req["cache_salt"] = "s2";
    auto r = parse_or_null(curl("POST", s.url("/v1/completions"), req.dump()).body);
    EXPECT_EQ(r["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << r.dump();
    req["cache_salt"] = "s1";
    r = parse_or_null(curl("POST", s.url("/v1/completions"), req.dump()).body);
    EXPECT_GT(r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << r.dump();
}

TEST(ServerSecurity, AClientThatLeavesCancelsItsNonStreamedRequest) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const double before = metric_value(metrics_text(s), "lazyattn_client_disconnects_total");
    {
        RawHttpStream c(s.port(), "POST", "/v1/completions", completion_body(false, {{"ignore_eos", true}}, 4000));
        usleep(100 * 1000);
    }  // closed without reading
    EXPECT_TRUE(wait_blocks_released(s, 10));
    EXPECT_GT(metric_value(metrics_text(s), "lazyattn_client_disconnects_total"), before);
}

TEST(ServerSecurity, MaxTokensIsCappedByTheServer) {
    ServerProcess s(server_args({"--max-tokens-cap", "5"}));
    ASSERT_TRUE(s.started()) << s.log();
    for (bool chat : {false, true}) {
        json body = json::parse(completion_body(chat, {{"ignore_eos", true}}, 100));
        if (chat) body.erase("max_tokens");  // chat's default is the rest of the context
        auto r =
            parse_or_null(curl("POST", s.url(chat ? "/v1/chat/completions" : "/v1/completions"), body.dump()).body);
        EXPECT_EQ(r["usage"]["completion_tokens"], 5) << r.dump();
        EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
    }
}

}  // namespace
}  // namespace lazyattn::testing
