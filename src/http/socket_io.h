// Thin, checked wrappers over the POSIX socket calls the HTTP server makes. Every socket is
// non-blocking; writes wait with poll() and give up when the peer makes no progress in time.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "core/status.h"

namespace lazyattn::http {

// A listening TCP socket on host:port (port 0: any free port); *bound_port says which.
Expected<int> listen_on(const std::string& host, int port, int* bound_port);
// The peer's IP address as text ("" when unknown).
std::string peer_address(int fd);
void set_nonblocking(int fd);
// Writes all of `data`; false when the peer is gone or accepted no byte for the stall timeout.
// The timeout is read again while waiting, so a server shutting down can cut a wait short.
bool write_all(int fd, std::string_view data, const std::atomic<double>& stall_timeout_s);
bool write_all(int fd, std::string_view data, double stall_timeout_s);
// One write attempt that never waits (small refusals written by the event loop).
void write_some(int fd, std::string_view data);
// What the peer did to its side of the connection (data it sent ahead does not count).
enum class PeerState {
    kOpen,        // nothing seen
    kEndOfInput,  // a FIN: the peer closed, or only half-closed its sending side and still reads
    kReset,       // reset or hung up: it reads nothing more
};
PeerState peer_state(int fd);

}  // namespace lazyattn::http
