#include "http/socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace lazyattn::http {

Expected<int> listen_on(const std::string& host, int port, int* bound_port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
        return io_error("cannot resolve '" + host + "': " + gai_strerror(rc));
    }
    int fd = -1;
    std::string why = "no address";
    for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) continue;
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
            why = std::strerror(errno);
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0) return io_error("cannot listen on " + host + ":" + service + " (" + why + ")");
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    *bound_port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                             : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    return fd;
}

std::string peer_address(int fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
    char buf[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, buf, sizeof buf);
    } else if (addr.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, buf, sizeof buf);
    }
    return buf;
}

void set_nonblocking(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool write_all(int fd, std::string_view data, const std::atomic<double>& stall_timeout_s) {
    constexpr int kSliceMs = 100;  // how often a blocked write looks at the (changeable) timeout
    double stalled_ms = 0;
    while (!data.empty()) {
        const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(size_t(n));
            stalled_ms = 0;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
        const double limit_ms = stall_timeout_s.load() * 1000;
        if (stalled_ms >= limit_ms) return false;
        pollfd p{fd, POLLOUT, 0};
        const auto t0 = std::chrono::steady_clock::now();
        const int rc = poll(&p, 1, int(std::min<double>(kSliceMs, limit_ms - stalled_ms)) + 1);
        stalled_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (rc < 0 && errno != EINTR) return false;
        if (rc > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
    }
    return true;
}

bool write_all(int fd, std::string_view data, double stall_timeout_s) {
    const std::atomic<double> stall{stall_timeout_s};
    return write_all(fd, data, stall);
}

void write_some(int fd, std::string_view data) {
    [[maybe_unused]] ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

PeerState peer_state(int fd) {
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return PeerState::kOpen;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return PeerState::kReset;
    if (p.revents & POLLRDHUP) return PeerState::kEndOfInput;
    char c;
    const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return PeerState::kEndOfInput;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return PeerState::kReset;
    return PeerState::kOpen;
}

}  // namespace lazyattn::http
