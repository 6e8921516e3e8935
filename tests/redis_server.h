// A real redis-server for tests, started on a free loopback port (no persistence) and stopped
// (SIGKILL: a crash, as the fault tests want) by the destructor or kill().
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace lazyattn::store::testing {

inline int free_loopback_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

inline bool port_accepts(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    return ok;
}

// A listening socket nobody accepts on: a Redis that takes connections and never answers (the
// kernel completes the handshake from the backlog).
class SilentRedis {
public:
    SilentRedis() {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
        listen(fd_, 64);
        socklen_t len = sizeof a;
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
    }
    ~SilentRedis() { close(fd_); }
    SilentRedis(const SilentRedis&) = delete;
    SilentRedis& operator=(const SilentRedis&) = delete;
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

private:
    int fd_ = -1;
    int port_ = 0;
};

class RedisServer {
public:
    // With a password, clients must AUTH (requirepass).
    explicit RedisServer(int port = 0, std::string password = "")
        : port_(port > 0 ? port : free_loopback_port()), password_(std::move(password)) {
        start();
    }
    ~RedisServer() { kill(); }
    int port() const { return port_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    bool running() const { return pid_ > 0; }

    // Starts (again, on the same port); false when redis-server is missing or never listened.
    bool start() {
        if (pid_ > 0) return true;
        const std::string port = std::to_string(port_);
        pid_ = fork();
        if (pid_ == 0) {
            // Its start-up banner and warnings would bury the test's own output.
            const int null_fd = open("/dev/null", O_WRONLY);
            if (null_fd >= 0) {
                dup2(null_fd, STDOUT_FILENO);
                dup2(null_fd, STDERR_FILENO);
            }
            if (password_.empty()) {
                execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
                       "--appendonly", "no", "--loglevel", "warning", (char*)nullptr);
            } else {
                execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
                       "--appendonly", "no", "--loglevel", "warning", "--requirepass", password_.c_str(),
                       (char*)nullptr);
            }
            _exit(127);
        }
        for (int i = 0; i < 500; ++i) {  // up to 10 s for a loaded machine
            if (port_accepts(port_)) return true;
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) break;  // exited: missing or refused
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        kill();
        return false;
    }
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

private:
    int port_;
    std::string password_;
    pid_t pid_ = -1;
};

}  // namespace lazyattn::store::testing
