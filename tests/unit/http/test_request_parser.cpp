// RequestParser: framing, limits and refusals, fed whole and byte by byte.
#include <gtest/gtest.h>

#include <string>

#include "compress_util.h"
#include "http/request_parser.h"

namespace lazyattn::http {
namespace {

using State = RequestParser::State;
using testing::gzip;

HttpLimits small_limits() {
    HttpLimits l;
    l.max_body_bytes = 1000;
    l.max_header_bytes = 512;
    l.max_header_count = 8;
    return l;
}

// Feeds `bytes` in pieces of `step` and returns the final state (stops at complete or error).
State feed_in_steps(RequestParser& p, std::string bytes, size_t step, std::string& buffer) {
    State st = p.state();
    for (size_t i = 0; i < bytes.size(); i += step) {
        buffer.append(bytes, i, step);
        st = p.feed(buffer);
        if (st == State::kComplete || st == State::kError) {
            buffer.append(bytes, i + step < bytes.size() ? i + step : bytes.size(), std::string::npos);
            return st;
        }
    }
    return st;
}

TEST(RequestParser, ContentLengthBodyWholeAndByteByByte) {
    const std::string req =
        "POST /v1/completions?x=1&cache_salt=a%20b HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
        "Content-Length: 11\r\n\r\n{\"a\": true}";
    for (size_t step : {req.size(), size_t(1), size_t(7)}) {
        RequestParser p(small_limits());
        std::string buf;
        ASSERT_EQ(feed_in_steps(p, req, step, buf), State::kComplete) << step;
        HttpRequest r = p.take();
        EXPECT_EQ(r.method, "POST");
        EXPECT_EQ(r.path, "/v1/completions");
        EXPECT_EQ(r.query_param("cache_salt"), "a b");
        EXPECT_EQ(r.query_param("x"), "1");
        EXPECT_EQ(r.header("content-type"), "application/json");
        EXPECT_EQ(r.body, "{\"a\": true}");
        EXPECT_TRUE(buf.empty());
        EXPECT_EQ(p.state(), State::kIdle);
    }
}

TEST(RequestParser, PipelinedRequestsStayInTheBuffer) {
    RequestParser p(small_limits());
    std::string buf = "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/mo";
    ASSERT_EQ(p.feed(buf), State::kComplete);
    EXPECT_EQ(p.take().path, "/health");
    ASSERT_EQ(p.feed(buf), State::kComplete);
    EXPECT_EQ(p.take().path, "/metrics");
    EXPECT_EQ(p.feed(buf), State::kHead);
    buf += "dels HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(p.feed(buf), State::kComplete);
    EXPECT_EQ(p.take().path, "/v1/models");
}

TEST(RequestParser, ChunkedBodyIsDecoded) {
    const std::string req =
        "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: "
        "1\r\n\r\n"
        "GET /next HTTP/1.1\r\nHost: x\r\n\r\n";
    for (size_t step : {req.size(), size_t(1), size_t(3)}) {
        RequestParser p(small_limits());
        std::string buf;
        ASSERT_EQ(feed_in_steps(p, req, step, buf), State::kComplete) << step;
        EXPECT_EQ(p.take().body, "hello world");
        ASSERT_EQ(p.feed(buf), State::kComplete);
        EXPECT_EQ(p.take().path, "/next");
    }
}

TEST(RequestParser, OversizedBodiesAre413WhateverTheFraming) {
    {  // declared length
        RequestParser p(small_limits());
        std::string buf = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n";
        ASSERT_EQ(p.feed(buf), State::kError);
        EXPECT_EQ(p.error().status, 413);
    }
    {  // chunked: refused as soon as the running total passes the limit, before the data arrives
        RequestParser p(small_limits());
        std::string buf = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n" +
                          std::string(512, 'a') + "\r\n200\r\n";
        ASSERT_EQ(p.feed(buf), State::kError);
        EXPECT_EQ(p.error().status, 413);
    }
    {  // a small gzip body that inflates past the limit
        const std::string z = gzip(std::string(100000, 'a'));
        ASSERT_LT(z.size(), 1000u);
        RequestParser p(small_limits());
        std::string buf =
            "POST /x HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: " + std::to_string(z.size()) +
            "\r\n\r\n" + z;
        ASSERT_EQ(p.feed(buf), State::kError);
        EXPECT_EQ(p.error().status, 413);
        EXPECT_EQ(p.error().code, "request_too_large");
    }
}

TEST(RequestParser, GzipBodyWithinTheLimitIsDecoded) {
    const std::string text(900, 'b');
    const std::string z = gzip(text);
    RequestParser p(small_limits());
    std::string buf =
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: " + std::to_string(z.size()) +
        "\r\n\r\n" + z;
    ASSERT_EQ(p.feed(buf), State::kComplete);
    EXPECT_EQ(p.take().body, text);
}

TEST(RequestParser, HeaderLimitsAre431AndLongUrisAre414) {
    {
        RequestParser p(small_limits());
        std::string buf = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(600, 'v') + "\r\n\r\n";
        ASSERT_EQ(p.feed(buf), State::kError);
        EXPECT_EQ(p.error().status, 431);
        EXPECT_EQ(p.error().code, "request_header_fields_too_large");
    }
    {
        RequestParser p(small_limits());
        std::string buf = "GET / HTTP/1.1\r\nHost: x\r\n";
        for (int i = 0; i < 9; ++i) buf += "X-" + std::to_string(i) + ": v\r\n";
        buf += "\r\n";
        ASSERT_EQ(p.feed(buf), State::kError);
        EXPECT_EQ(p.error().status, 431);
    }
    {
        HttpLimits l = small_limits();
        l.max_header_bytes = 64 << 10;
        RequestParser p(l);
        std::string buf = "GET /" + std::string(9000, 'a');
        ASSERT_EQ(p.feed(buf), State::kError);
        EXPECT_EQ(p.error().status, 414);
    }
}

TEST(RequestParser, SmugglingShapesAreRefused) {
    const char* cases[] = {
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n",
        "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "GET /x HTTP/1.1\r\nHost: x\r\n folded: header\r\n\r\n",
        "GET /x HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n",
        "GET x HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /x HTTP/2.0\r\n\r\n",
        "GET /x\r\n\r\n",
        "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        // found by the fuzzer: a long chunk-size line once overflowed the size arithmetic
        "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1A00000000000000000000000000000000000000\r\n",
        "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\na",
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd",
    };
    for (const char* c : cases) {
        RequestParser p(small_limits());
        std::string buf = c;
        EXPECT_EQ(p.feed(buf), State::kError) << c;
        EXPECT_GE(p.error().status, 400) << c;
        EXPECT_FALSE(p.error().code.empty()) << c;
    }
}

TEST(RequestParser, ExpectContinueIsReportedUntilTheBodyArrives) {
    RequestParser p(small_limits());
    std::string buf = "POST /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    ASSERT_EQ(p.feed(buf), State::kBody);
    EXPECT_TRUE(p.wants_continue());
    buf = "ok";
    ASSERT_EQ(p.feed(buf), State::kComplete);
    EXPECT_EQ(p.take().body, "ok");
}

// RFC 9112's rules where a lenient parser would accept what a proxy in front may read otherwise.
TEST(RequestParser, FollowsRfc9112Framing) {
    auto parse = [](const std::string& raw, HttpLimits l = small_limits()) {
        RequestParser p(l);
        std::string buf = raw;
        const State st = p.feed(buf);
        return std::make_pair(st, st == State::kError ? p.error() : HttpError{0, "", ""});
    };
    {  // a whole head whose request line is 8-16 KiB: 414, not a route lookup
        HttpLimits l = small_limits();
        l.max_header_bytes = 64 << 10;
        auto [st, e] = parse("GET /" + std::string(10000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n", l);
        EXPECT_EQ(st, State::kError);
        EXPECT_EQ(e.status, 414);
        EXPECT_EQ(e.code, "uri_too_long");
    }
    // HTTP/1.0 with Transfer-Encoding has faulty framing (6.1)
    EXPECT_EQ(parse("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n").second.code, "bad_transfer_encoding");
    // chunk-size = 1*HEXDIG [BWS ";" ext]: no spaces around the bare size
    for (const char* size_line : {"5 \r\n", " 5\r\n", "5\t\r\n", "+5\r\n", "0x5\r\n"}) {
        auto [st, e] = parse(std::string("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n") +
                             size_line + "hello\r\n0\r\n\r\n");
        EXPECT_EQ(st, State::kError) << size_line;
        EXPECT_EQ(e.code, "bad_chunked_body") << size_line;
    }
    EXPECT_EQ(
        parse("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 ;a=b\r\nhello\r\n0\r\n\r\n").first,
        State::kComplete);
    {  // a 100 KB chunk extension, even when its line ending has arrived
        auto [st, e] = parse("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;" +
                             std::string(100000, 'e') + "\r\nhello\r\n0\r\n\r\n");
        EXPECT_EQ(st, State::kError);
        EXPECT_EQ(e.code, "bad_chunked_body");
    }
    // Host: exactly one in HTTP/1.1, never two; HTTP/1.0 may omit it
    EXPECT_EQ(parse("GET /x HTTP/1.1\r\n\r\n").second.code, "bad_host");
    EXPECT_EQ(parse("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").second.code, "bad_host");
    EXPECT_EQ(parse("GET /x HTTP/1.0\r\n\r\n").first, State::kComplete);
    {  // two Content-Encoding fields: refused, not "the first wins"
        auto [st, e] = parse(
            "POST /x HTTP/1.1\r\nHost: x\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\n"
            "Content-Length: 1\r\n\r\na");
        EXPECT_EQ(e.status, 415);
    }
    {  // absolute-form is accepted (3.2.2); asterisk- and authority-form are not served
        RequestParser p(small_limits());
        std::string buf = "GET http://example.com:8080/v1/models?cache_salt=s HTTP/1.1\r\nHost: x\r\n\r\n";
        ASSERT_EQ(p.feed(buf), State::kComplete);
        HttpRequest r = p.take();
        EXPECT_EQ(r.path, "/v1/models");
        EXPECT_EQ(r.query_param("cache_salt"), "s");
        buf = "GET HTTP://example.com HTTP/1.1\r\nHost: x\r\n\r\n";
        ASSERT_EQ(p.feed(buf), State::kComplete);
        EXPECT_EQ(p.take().path, "/");
    }
    EXPECT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").second.code, "bad_request_line");
    EXPECT_EQ(parse("CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").second.code, "bad_request_line");
    EXPECT_EQ(parse("GET http:///x HTTP/1.1\r\nHost: x\r\n\r\n").second.code, "bad_request_line");
}

}  // namespace
}  // namespace lazyattn::http
