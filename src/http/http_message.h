// HttpRequest / HttpResponse: the plain data a route handler sees and fills. Header names are
// stored lower-case (HTTP field names are case-insensitive); values as received, trimmed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lazyattn::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
    std::string method;                    // "GET", "POST", ...
    std::string target;                    // as sent: path plus query
    std::string path;                      // target up to '?', percent-decoding not applied
    std::string query;                     // after '?', "" when none
    int version_minor = 1;                 // HTTP/1.<minor>
    HeaderList headers;                    // lower-case names, in order
    std::string body;                      // decoded: chunked framing and Content-Encoding removed
    std::string remote_addr;               // the peer's IP address
    std::vector<std::string> path_params;  // what a route's "{...}" segments matched
    double arrival_ms = 0;                 // steady-clock ms when the request's first byte arrived

    // The first value of a header ("" when absent); `name` in lower case.
    const std::string& header(std::string_view name) const;
    bool has_header(std::string_view name) const;
    // A query parameter's value (percent-decoded, '+' as space); "" when absent.
    std::string query_param(std::string_view name) const;
};

// Where a streamed response body goes: each write() sends one chunk now. false: the client is
// gone (or stopped reading past the write deadline); stop producing.
class ChunkSink {
public:
    virtual ~ChunkSink() = default;
    virtual bool write(std::string_view data) = 0;
};

// Lets a handler that waits (a non-streamed completion) notice that its client went away.
class ClientLink {
public:
    virtual ~ClientLink() = default;
    virtual bool gone() const = 0;
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    HeaderList headers;  // extra headers (not Content-Length, Transfer-Encoding or Connection)
    std::string body;
    // Set for a streamed body: called once after the head went out; writes the body through the
    // sink (chunked transfer coding) and returns when done or when a write failed.
    std::function<void(ChunkSink&)> stream;
    // Extra numbers for the request's access-log line (token counts, TTFT); a stream may set them
    // when it ends, before the line is written.
    std::vector<std::pair<std::string, double>> log_fields;

    // Built in place from views: no temporary strings to move (GCC 12 warns falsely on those).
    void set_header(std::string_view name, std::string_view value) { headers.emplace_back(name, value); }
};

// The standard reason phrase of a status code ("Unknown" for codes it does not list).
const char* reason_phrase(int status);

}  // namespace lazyattn::http
