// HttpLimits: every bound the transport enforces on a client, in one place. Each protects the
// server's memory, threads or sockets from one kind of abuse; docs/api.md ("Security") states
// the resulting per-request memory bound.
#pragma once

#include <cstdint>

namespace lazyattn::http {

struct HttpLimits {
    int64_t max_body_bytes = 8 << 20;          // after chunked decoding AND after decompression (413)
    int32_t max_header_bytes = 16 << 10;       // request line + headers (431; 414 for a long URI)
    int32_t max_header_count = 100;            // header fields (431)
    double header_timeout_s = 10;              // first byte of a request -> end of its headers (408)
    double request_timeout_s = 60;             // first byte of a request -> end of its body (408)
    double keep_alive_timeout_s = 5;           // an idle keep-alive connection is closed after this
    double write_timeout_s = 30;               // a client that reads nothing for this long is dropped
    int32_t max_connections = 1024;            // open connections in all (503 beyond)
    int32_t max_connections_per_client = 128;  // open connections from one IP address (429 beyond)
    int32_t max_requests_per_connection = 1000;
};

}  // namespace lazyattn::http
