// RequestParser: HTTP/1.1 requests from a byte stream, incrementally and within HttpLimits. It
// never holds more than one request's head plus its capped body, refuses what could smuggle a
// second request past a proxy (Content-Length with Transfer-Encoding, conflicting lengths,
// transfer codings other than chunked), and leaves the bytes of a pipelined next request in the
// caller's buffer. Bodies are decoded (chunked framing, then gzip/deflate) with the size limit
// applied to the decoded bytes, so neither chunking nor compression gets past it.
//
// Pure: no sockets, no clocks. The connection feeds it what it read and asks where it stands.
#pragma once

#include <cstdint>
#include <string>

#include "http/http_limits.h"
#include "http/http_message.h"

namespace lazyattn::http {

// A refusal: the status to answer, a message for a person, a stable machine code.
struct HttpError {
    int status = 400;
    std::string message;
    std::string code;
};

class RequestParser {
public:
    enum class State { kIdle, kHead, kBody, kComplete, kError };

    // hold_body: stop after each request's head (holding_body()) until release_body(), so the
    // caller can refuse the request before any of its body is read.
    explicit RequestParser(const HttpLimits& limits, bool hold_body = false) : limits_(limits), hold_body_(hold_body) {}

    // Consumes from the front of `buffer` as far as the current request goes and returns where
    // the request stands. Bytes after a complete request stay in `buffer`.
    State feed(std::string& buffer);
    State state() const { return state_; }
    // True once any byte of the current request arrived (a keep-alive connection between
    // requests is idle, not slow).
    bool started() const { return state_ != State::kIdle; }
    // The head is complete, asked for "Expect: 100-continue", and the body is still to come.
    bool wants_continue() const { return state_ == State::kBody && expect_continue_ && !holding_body(); }
    // The head is whole and the body waits for release_body() (only with hold_body).
    bool holding_body() const { return hold_body_ && !released_ && state_ == State::kBody; }
    // The request's method, target and headers (complete once holding_body() or kComplete).
    const HttpRequest& head() const { return request_; }
    // Reads on into the body from `buffer`; returns the state as feed() does.
    State release_body(std::string& buffer) {
        released_ = true;
        return feed(buffer);
    }

    // kComplete: the request (the parser is then ready for the next one).
    HttpRequest take();
    // kError: why.
    const HttpError& error() const { return error_; }

private:
    State fail(int status, std::string message, std::string code);
    State parse_head(std::string& buffer);
    State parse_body(std::string& buffer);
    State parse_chunked(std::string& buffer);
    State finish_body();
    bool head_fields(std::string_view head);

    const HttpLimits limits_;
    const bool hold_body_;
    bool released_ = false;
    State state_ = State::kIdle;
    HttpRequest request_;
    HttpError error_;
    bool chunked_ = false;
    bool expect_continue_ = false;
    int64_t content_length_ = 0;
    std::string raw_body_;
    // Chunked decoding: the current chunk's bytes still to read, and where the decoder is.
    enum class ChunkPhase { kSize, kData, kDataEnd, kTrailer } chunk_phase_ = ChunkPhase::kSize;
    int64_t chunk_left_ = 0;
    int32_t trailer_bytes_ = 0;
};

}  // namespace lazyattn::http
