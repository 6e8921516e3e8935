// Loopback servers for the Redis faults a real redis-server cannot produce: a scripted RESP server
// (FakeRedis: each command answered with whatever bytes the test wants, on as many ports as it
// wants) and a proxy that passes a real server's replies on slowly (ThrottleProxy). Each runs one
// poll() thread and counts what it did (connections open, bytes sent), so tests can measure what
// the client let them do instead of timing it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.h"

namespace lazyattn::store::testing {

// Parses one RESP command (an array of bulk strings, as hiredis sends) from the front of `in`;
// false while it is incomplete.
inline bool take_command(std::string& in, std::vector<std::string>* words) {
    size_t pos = 0;
    auto line = [&](char kind, long* n) {
        const size_t eol = in.find("\r\n", pos);
        if (pos >= in.size() || in[pos] != kind || eol == std::string::npos) return false;
        *n = std::stol(in.substr(pos + 1, eol - pos - 1));
        pos = eol + 2;
        return true;
    };
    long count = 0;
    if (!line('*', &count)) return false;
    words->clear();
    for (long i = 0; i < count; ++i) {
        long len = 0;
        if (!line('$', &len) || in.size() < pos + size_t(len) + 2) return false;
        words->push_back(in.substr(pos, size_t(len)));
        pos += size_t(len) + 2;
    }
    in.erase(0, pos);
    return true;
}

// A RESP server answering each command with `answer(port index, words)`: raw RESP bytes (""
// answers nothing). Connections stay open until the client closes them.
class FakeRedis {
public:
    using Answer = std::function<std::string(int port_index, const std::vector<std::string>& words)>;

    explicit FakeRedis(Answer answer, int num_ports = 1) : answer_(std::move(answer)) {
        for (int i = 0; i < num_ports; ++i) {
            int port = 0;
            listeners_.push_back(listen_loopback(&port, true));
            ports_.push_back(port);
        }
        thread_ = std::thread([this] { loop(); });
    }
    ~FakeRedis() {
        stop_ = true;
        thread_.join();
        for (const Conn& c : conns_) close(c.fd);
        for (int fd : listeners_) close(fd);
    }
    FakeRedis(const FakeRedis&) = delete;
    FakeRedis& operator=(const FakeRedis&) = delete;

    int port(int i = 0) const { return ports_[size_t(i)]; }
    std::string address(int i = 0) const { return "127.0.0.1:" + std::to_string(port(i)); }
    std::string url(int i = 0) const { return "redis://" + address(i); }
    int open_connections() const { return open_.load(); }
    int64_t bytes_sent() const { return sent_.load(); }

private:
    struct Conn {
        int fd = -1;
        int port_index = 0;
        std::string in, out;
    };

    void loop() {
        while (!stop_) {
            std::vector<pollfd> fds;
            for (int fd : listeners_) fds.push_back({fd, POLLIN, 0});
            for (const Conn& c : conns_) fds.push_back({c.fd, short(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
            if (poll(fds.data(), fds.size(), 20) <= 0) continue;
            for (size_t i = 0; i < listeners_.size(); ++i) {
                if ((fds[i].revents & POLLIN) == 0) continue;
                const int fd = accept4(listeners_[i], nullptr, nullptr, SOCK_NONBLOCK);
                if (fd >= 0) conns_.push_back({fd, int(i), "", ""});
            }
            const size_t polled = fds.size() - listeners_.size();
            std::vector<Conn> alive;
            for (size_t j = 0; j < conns_.size(); ++j) {
                const short revents = j < polled ? fds[listeners_.size() + j].revents : 0;
                if (serve(conns_[j], revents)) {
                    alive.push_back(std::move(conns_[j]));
                } else {
                    close(conns_[j].fd);
                }
            }
            conns_ = std::move(alive);
            open_ = int(conns_.size());
        }
    }

    // False once the client is gone.
    bool serve(Conn& c, short revents) {
        if ((revents & POLLIN) != 0) {
            char buf[65536];
            const ssize_t n = read(c.fd, buf, sizeof buf);
            if (n == 0 || (n < 0 && errno != EAGAIN)) return false;
            if (n > 0) c.in.append(buf, size_t(n));
            std::vector<std::string> words;
            while (take_command(c.in, &words)) c.out += answer_(c.port_index, words);
        }
        if (!c.out.empty()) {
            const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN) return false;
            if (n > 0) {
                c.out.erase(0, size_t(n));
                sent_ += n;
            }
        }
        return (revents & (POLLHUP | POLLERR)) == 0;
    }

    Answer answer_;
    std::vector<int> listeners_, ports_;
    std::vector<Conn> conns_;  // the loop's thread only
    std::atomic<int> open_{0};
    std::atomic<int64_t> sent_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// A proxy in front of a real server: commands go through at once, replies come back `chunk`
// bytes every `every` (a server, or a link, that keeps sending slowly).
class ThrottleProxy {
public:
    ThrottleProxy(int upstream_port, size_t chunk, std::chrono::milliseconds every)
        : upstream_(upstream_port), chunk_(chunk), every_(every) {
        listener_ = listen_loopback(&port_, true);
        thread_ = std::thread([this] { loop(); });
    }
    ~ThrottleProxy() {
        stop_ = true;
        thread_.join();
        for (const Pair& p : pairs_) {
            close(p.client);
            close(p.server);
        }
        close(listener_);
    }
    ThrottleProxy(const ThrottleProxy&) = delete;
    ThrottleProxy& operator=(const ThrottleProxy&) = delete;

    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    int64_t bytes_to_clients() const { return sent_.load(); }

private:
    struct Pair {
        int client = -1, server = -1;
        std::string pending;  // the server's bytes not yet passed on
        std::chrono::steady_clock::time_point next_send{};
    };

    void loop() {
        while (!stop_) {
            std::vector<pollfd> fds{{listener_, POLLIN, 0}};
            for (const Pair& p : pairs_) {
                fds.push_back({p.client, POLLIN, 0});
                fds.push_back({p.server, POLLIN, 0});
            }
            poll(fds.data(), fds.size(), 5);
            if ((fds[0].revents & POLLIN) != 0) accept_one();
            std::vector<Pair> alive;
            for (size_t i = 0; i < pairs_.size(); ++i) {
                const bool polled = 1 + 2 * i + 1 < fds.size();
                if (pass(pairs_[i], polled ? fds[1 + 2 * i].revents : 0, polled ? fds[2 + 2 * i].revents : 0)) {
                    alive.push_back(std::move(pairs_[i]));
                } else {
                    close(pairs_[i].client);
                    close(pairs_[i].server);
                }
            }
            pairs_ = std::move(alive);
        }
    }

    void accept_one() {
        const int client = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK);
        if (client < 0) return;
        const int server = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(uint16_t(upstream_));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            close(client);
            close(server);
            return;
        }
        pairs_.push_back({client, server, "", std::chrono::steady_clock::now()});
    }

    // False once either side is gone.
    bool pass(Pair& p, short client_events, short server_events) {
        char buf[65536];
        if ((client_events & POLLIN) != 0) {  // commands: on at once (the server reads them fast)
            const ssize_t n = read(p.client, buf, sizeof buf);
            if (n == 0 || (n < 0 && errno != EAGAIN)) return false;
            if (n > 0 && send(p.server, buf, size_t(n), MSG_NOSIGNAL) != n) return false;
        }
        if ((server_events & POLLIN) != 0) {
            const ssize_t n = read(p.server, buf, sizeof buf);
            if (n <= 0) return false;
            p.pending.append(buf, size_t(n));
        }
        const auto now = std::chrono::steady_clock::now();
        if (!p.pending.empty() && now >= p.next_send) {
            const ssize_t n = send(p.client, p.pending.data(), std::min(chunk_, p.pending.size()), MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN) return false;
            if (n > 0) {
                p.pending.erase(0, size_t(n));
                sent_ += n;
            }
            p.next_send = now + every_;
        }
        return ((client_events | server_events) & (POLLHUP | POLLERR)) == 0;
    }

    int upstream_;
    size_t chunk_;
    std::chrono::milliseconds every_;
    int listener_ = -1, port_ = 0;
    std::vector<Pair> pairs_;  // the loop's thread only
    std::atomic<int64_t> sent_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace lazyattn::store::testing
