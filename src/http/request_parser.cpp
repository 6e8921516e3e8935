#include "http/request_parser.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "http/body_decoder.h"

namespace lazyattn::http {
namespace {

constexpr int32_t kMaxRequestLine = 8 << 10;  // a longer request line is a 414
constexpr int32_t kMaxChunkLine = 1024;       // "size;extensions"

bool is_token_char(unsigned char c) { return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

// Where the head ends: the index just past the blank line ("\r\n\r\n", or bare "\n\n"), or npos.
size_t head_end(const std::string& buf, size_t limit) {
    const size_t n = std::min(buf.size(), limit);
    for (size_t i = 0; i < n; ++i) {
        if (buf[i] != '\n') continue;
        if (i + 1 < buf.size() && buf[i + 1] == '\n') return i + 2;
        if (i + 2 < buf.size() && buf[i + 1] == '\r' && buf[i + 2] == '\n') return i + 3;
    }
    return std::string::npos;
}

// Next line of `s` from `pos` without its line ending; advances pos past it.
std::string_view next_line(std::string_view s, size_t& pos) {
    const size_t nl = s.find('\n', pos);
    std::string_view line = s.substr(pos, (nl == std::string_view::npos ? s.size() : nl) - pos);
    pos = nl == std::string_view::npos ? s.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
}

bool parse_decimal(std::string_view s, int64_t& out) {
    if (s.empty() || s.size() > 18) return false;
    out = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        out = out * 10 + (c - '0');
    }
    return true;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

RequestParser::State RequestParser::fail(int status, std::string message, std::string code) {
    error_ = {status, std::move(message), std::move(code)};
    return state_ = State::kError;
}

RequestParser::State RequestParser::feed(std::string& buffer) {
    if (state_ == State::kIdle) {
        // Tolerate blank lines between pipelined requests (RFC 9112 2.2).
        size_t skip = 0;
        while (skip < buffer.size() && (buffer[skip] == '\r' || buffer[skip] == '\n')) ++skip;
        buffer.erase(0, skip);
        if (buffer.empty()) return state_;
        state_ = State::kHead;
    }
    if (state_ == State::kHead) parse_head(buffer);
    if (state_ == State::kBody && !holding_body()) parse_body(buffer);
    return state_;
}

RequestParser::State RequestParser::parse_head(std::string& buffer) {
    const size_t limit = size_t(limits_.max_header_bytes);
    const size_t end = head_end(buffer, limit);
    if (end == std::string::npos) {
        const size_t first_nl = buffer.find('\n');
        const size_t line_length = first_nl == std::string::npos ? buffer.size() : first_nl;
        if (line_length > size_t(kMaxRequestLine)) {
            return fail(414, "the request line is longer than " + std::to_string(kMaxRequestLine) + " bytes",
                        "uri_too_long");
        }
        if (buffer.size() >= limit) {
            return fail(431, "the request headers are larger than " + std::to_string(limit) + " bytes",
                        "request_header_fields_too_large");
        }
        return state_;
    }
    // A whole head can still hold a request line too long for us (8-16 KiB fit the head cap).
    if (const size_t first_nl = buffer.find('\n'); first_nl > size_t(kMaxRequestLine)) {
        return fail(414, "the request line is longer than " + std::to_string(kMaxRequestLine) + " bytes",
                    "uri_too_long");
    }
    const std::string head = buffer.substr(0, end);
    buffer.erase(0, end);
    if (!head_fields(head)) return state_;
    state_ = State::kBody;
    return state_;
}

bool RequestParser::head_fields(std::string_view head) {
    size_t pos = 0;
    const std::string_view line = next_line(head, pos);
    // METHOD SP request-target SP HTTP/1.x
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
        fail(400, "malformed request line", "bad_request_line");
        return false;
    }
    const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                           version = line.substr(sp2 + 1);
    if (method.empty() ||
        !std::all_of(method.begin(), method.end(), [](unsigned char c) { return is_token_char(c); })) {
        fail(400, "malformed request method", "bad_request_line");
        return false;
    }
    if (std::any_of(target.begin(), target.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; })) {
        fail(400, "control characters or spaces in the request target", "bad_request_line");
        return false;
    }
    // RFC 9112 3.2: origin-form ("/path?query"), or absolute-form ("http://host/path"), which a
    // server must accept (its authority then takes the place of Host). Authority-form (CONNECT)
    // and asterisk-form ("OPTIONS *") name nothing served here.
    std::string_view origin = target;
    bool absolute_form = false;
    if (target.empty() || target[0] != '/') {
        const std::string scheme = lower(target.substr(0, std::min<size_t>(target.size(), 8)));
        const size_t skip = scheme.rfind("http://", 0) == 0 ? 7 : scheme.rfind("https://", 0) == 0 ? 8 : 0;
        const size_t slash = skip == 0 ? std::string_view::npos : target.find_first_of("/?", skip);
        if (skip == 0 || slash == skip) {
            fail(400, "the request target must be a path (or an absolute http:// URI)", "bad_request_line");
            return false;
        }
        origin = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
        if (!origin.empty() && origin[0] == '?') origin = std::string_view();  // "http://h?q": path "/"
        absolute_form = true;
    }
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        fail(505, "only HTTP/1.0 and HTTP/1.1 are served", "http_version_not_supported");
        return false;
    }
    HttpRequest& r = request_;
    r.method = std::string(method);
    r.target = std::string(target);
    if (absolute_form && origin.empty()) {  // "http://host?query"
        const size_t q = target.find('?');
        r.path = "/";
        r.query = std::string(target.substr(q + 1));
    } else {
        const size_t q = origin.find('?');
        r.path = std::string(origin.substr(0, q));
        r.query = q == std::string_view::npos ? "" : std::string(origin.substr(q + 1));
    }
    r.version_minor = version.back() - '0';

    bool has_length = false;
    int hosts = 0, encodings = 0;
    while (pos < head.size()) {
        const std::string_view field = next_line(head, pos);
        if (field.empty()) break;  // the blank line ending the head
        if (field[0] == ' ' || field[0] == '\t') {
            fail(400, "obsolete header line folding is not accepted", "bad_header");
            return false;
        }
        const size_t colon = field.find(':');
        const std::string_view name = colon == std::string_view::npos ? std::string_view{} : field.substr(0, colon);
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return is_token_char(c); })) {
            fail(400, "malformed header line", "bad_header");
            return false;
        }
        const std::string_view value = trim(field.substr(colon + 1));
        if (std::any_of(value.begin(), value.end(),
                        [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; })) {
            fail(400, "control characters in a header value", "bad_header");
            return false;
        }
        if (int32_t(r.headers.size()) >= limits_.max_header_count) {
            fail(431, "more than " + std::to_string(limits_.max_header_count) + " header fields",
                 "request_header_fields_too_large");
            return false;
        }
        r.headers.emplace_back(lower(name), std::string(value));
        const std::string& key = r.headers.back().first;
        if (key == "content-length") {
            int64_t n = 0;
            if (!parse_decimal(value, n) || (has_length && n != content_length_)) {
                fail(400, "invalid or conflicting Content-Length", "bad_content_length");
                return false;
            }
            has_length = true;
            content_length_ = n;
        } else if (key == "host") {
            ++hosts;
        } else if (key == "content-encoding") {
            ++encodings;
        } else if (key == "transfer-encoding") {
            // RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
            if (r.version_minor == 0) {
                fail(400, "Transfer-Encoding is not defined for HTTP/1.0", "bad_transfer_encoding");
                return false;
            }
            if (lower(value) != "chunked" || chunked_) {
                fail(501, "only the chunked transfer coding is supported", "unsupported_transfer_encoding");
                return false;
            }
            chunked_ = true;
        } else if (key == "expect") {
            if (lower(value) != "100-continue") {
                fail(417, "only 'Expect: 100-continue' is understood", "expectation_failed");
                return false;
            }
            expect_continue_ = true;
        }
    }
    // RFC 9112 3.2: an HTTP/1.1 request needs exactly one Host; no request may carry two.
    if (hosts > 1 || (hosts == 0 && r.version_minor >= 1)) {
        fail(400, hosts > 1 ? "more than one Host header" : "an HTTP/1.1 request needs a Host header", "bad_host");
        return false;
    }
    if (encodings > 1) {  // codings in two fields would apply in order; one coding is supported
        fail(415, "at most one Content-Encoding header (identity, gzip or deflate)", "unsupported_content_encoding");
        return false;
    }
    if (chunked_ && has_length) {
        fail(400, "Content-Length together with Transfer-Encoding is refused", "bad_content_length");
        return false;
    }
    if (content_length_ > limits_.max_body_bytes) {
        fail(413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes",
             "request_too_large");
        return false;
    }
    if (!chunked_ && content_length_ == 0) expect_continue_ = false;
    return true;
}

RequestParser::State RequestParser::parse_body(std::string& buffer) {
    if (chunked_) return parse_chunked(buffer);
    const size_t want = size_t(content_length_) - raw_body_.size();
    const size_t take = std::min(want, buffer.size());
    raw_body_.append(buffer, 0, take);
    buffer.erase(0, take);
    if (int64_t(raw_body_.size()) < content_length_) return state_;
    return finish_body();
}

RequestParser::State RequestParser::parse_chunked(std::string& buffer) {
    size_t pos = 0;
    auto consume = [&] {
        buffer.erase(0, pos);
        pos = 0;
    };
    for (;;) {
        if (chunk_phase_ == ChunkPhase::kData) {
            const size_t take = size_t(std::min<int64_t>(chunk_left_, int64_t(buffer.size() - pos)));
            raw_body_.append(buffer, pos, take);
            pos += take;
            chunk_left_ -= int64_t(take);
            if (chunk_left_ > 0) break;
            chunk_phase_ = ChunkPhase::kDataEnd;
        }
        const size_t nl = buffer.find('\n', pos);
        if (nl == std::string::npos) {
            if (buffer.size() - pos > size_t(kMaxChunkLine)) {
                consume();
                return fail(400, "malformed chunked body", "bad_chunked_body");
            }
            break;
        }
        std::string_view line(buffer.data() + pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        pos = nl + 1;
        if (chunk_phase_ != ChunkPhase::kTrailer && line.size() > size_t(kMaxChunkLine)) {
            consume();
            return fail(
                400,
                "a chunk size line (with its extensions) is longer than " + std::to_string(kMaxChunkLine) + " bytes",
                "bad_chunked_body");
        }
        if (chunk_phase_ == ChunkPhase::kDataEnd) {
            if (!line.empty()) {
                consume();
                return fail(400, "malformed chunked body (chunk data longer than its size)", "bad_chunked_body");
            }
            chunk_phase_ = ChunkPhase::kSize;
        } else if (chunk_phase_ == ChunkPhase::kSize) {
            // RFC 9112 7.1: chunk-size = 1*HEXDIG, then optional extensions after BWS ";".
            size_t digits_end = 0;
            while (digits_end < line.size() && hex_digit(line[digits_end]) >= 0) ++digits_end;
            const std::string_view digits = line.substr(0, digits_end);
            const std::string_view rest = trim(line.substr(digits_end));
            int64_t size = 0;
            bool ok = !digits.empty() && digits.size() <= 15 &&  // 15 hex digits cannot overflow
                      (rest.empty() ? digits_end == line.size() : rest.front() == ';');
            for (size_t k = 0; ok && k < digits.size(); ++k) {
                const int d = hex_digit(digits[k]);
                ok = d >= 0;
                size = size * 16 + d;
            }
            if (!ok) {
                consume();
                return fail(400, "malformed chunk size", "bad_chunked_body");
            }
            if (int64_t(raw_body_.size()) + size > limits_.max_body_bytes) {
                consume();
                return fail(413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes",
                            "request_too_large");
            }
            chunk_left_ = size;
            chunk_phase_ = size == 0 ? ChunkPhase::kTrailer : ChunkPhase::kData;
        } else {  // trailer fields until a blank line; read and dropped, but counted as head bytes
            trailer_bytes_ += int32_t(line.size()) + 2;
            if (trailer_bytes_ > limits_.max_header_bytes) {
                consume();
                return fail(431, "the chunked trailer is too large", "request_header_fields_too_large");
            }
            if (line.empty()) {
                consume();
                return finish_body();
            }
        }
    }
    consume();
    return state_;
}

RequestParser::State RequestParser::finish_body() {
    switch (decode_content(request_.header("content-encoding"), raw_body_, limits_.max_body_bytes)) {
        case DecodeResult::kOk:
            break;
        case DecodeResult::kTooLarge:
            return fail(
                413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes (decoded)",
                "request_too_large");
        case DecodeResult::kCorrupt:
            return fail(400, "the compressed request body is corrupt", "bad_content_encoding");
        case DecodeResult::kUnsupported:
            return fail(415, "Content-Encoding must be identity, gzip or deflate", "unsupported_content_encoding");
    }
    request_.body = std::move(raw_body_);
    return state_ = State::kComplete;
}

HttpRequest RequestParser::take() {
    HttpRequest out = std::move(request_);
    request_ = HttpRequest();
    raw_body_.clear();
    chunked_ = false;
    expect_continue_ = false;
    content_length_ = 0;
    chunk_phase_ = ChunkPhase::kSize;
    chunk_left_ = 0;
    trailer_bytes_ = 0;
    released_ = false;
    state_ = State::kIdle;
    return out;
}

}  // namespace lazyattn::http
