// Thin, checked wrappers over the POSIX socket calls the HTTP server makes. Every socket is
// non-blocking; writes wait with poll() and give up when the peer makes no progress in time.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace lazyattn::http {

// A listening TCP socket on host:port (port 0: any free port); *bound_port says which.
Expected<int> listen_on(const std::string& host, int port, int* bound_port);
// The peer's IP address as text ("" when unknown).
std::string peer_address(int fd);
void set_nonblocking(int fd);
// Writes all of `data`; false when the peer is gone or accepted no byte for `stall_timeout_s`.
bool write_all(int fd, std::string_view data, double stall_timeout_s);
// One write attempt that never waits (small refusals written by the event loop).
void write_some(int fd, std::string_view data);
// True when the peer closed or reset the connection (data it sent ahead does not count).
bool peer_closed(int fd);

}  // namespace lazyattn::http
