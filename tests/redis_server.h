// A real redis-server for tests, started on a free loopback port (no persistence) and stopped
// (SIGKILL: a crash, as the fault tests want) by the destructor or kill(); and a Redis Cluster
// of such servers (RedisCluster), made with redis-cli.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

// A loopback socket listening on a free port (its number in *port); non-blocking for a server
// that polls (FakeRedis), blocking for one that never accepts.
inline int listen_loopback(int* port, bool nonblocking = false) {
    const int fd = socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd, 128);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    *port = ntohs(a.sin_port);
    return fd;
}

// A listening socket nobody accepts on: a Redis that takes connections and never answers (the
// kernel completes the handshake from the backlog).
class SilentRedis {
public:
    SilentRedis() { fd_ = listen_loopback(&port_); }
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
    // With a password, clients must AUTH (requirepass). `extra` are more redis-server arguments.
    explicit RedisServer(int port = 0, std::string password = "", std::vector<std::string> extra = {})
        : port_(port > 0 ? port : free_loopback_port()), password_(std::move(password)), extra_(std::move(extra)) {
        start();
    }
    ~RedisServer() { kill(); }
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;
    int port() const { return port_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    bool running() const { return pid_ > 0; }

    // Starts (again, on the same port); false when redis-server is missing or never listened.
    bool start() {
        if (pid_ > 0) return true;
        std::vector<std::string> args = {"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                         "--save",       "",       "--appendonly",        "no",     "--loglevel",
                                         "warning"};
        if (!password_.empty()) args.insert(args.end(), {"--requirepass", password_});
        args.insert(args.end(), extra_.begin(), extra_.end());
        pid_ = fork();
        if (pid_ == 0) {
            // Its start-up banner and warnings would bury the test's own output.
            const int null_fd = open("/dev/null", O_WRONLY);
            if (null_fd >= 0) {
                dup2(null_fd, STDOUT_FILENO);
                dup2(null_fd, STDERR_FILENO);
            }
            std::vector<char*> argv;
            for (std::string& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execvp("redis-server", argv.data());
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
        ::kill(pid_, SIGCONT);  // a paused server dies too
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    // SIGSTOP / SIGCONT: a server that holds its connections and answers nothing (a hung node).
    void pause() {
        if (pid_ > 0) ::kill(pid_, SIGSTOP);
    }
    void resume() {
        if (pid_ > 0) ::kill(pid_, SIGCONT);
    }

private:
    int port_;
    std::string password_;
    std::vector<std::string> extra_;
    pid_t pid_ = -1;
};

// What a shell command prints (stdout), or "" when it could not run.
inline std::string command_output(const std::string& command) {
    std::string out;
    if (FILE* p = popen(command.c_str(), "r")) {
        char buf[4096];
        size_t n = 0;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

// A loopback port that is free, and whose cluster bus port (port + 10000) is free too.
inline int free_cluster_port() {
    for (;;) {
        const int port = free_loopback_port();
        if (port + 10000 >= 65536) continue;
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(uint16_t(port + 10000));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool bus_free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        close(fd);
        if (bus_free) return port;
    }
}

// A Redis Cluster of `n` masters on loopback (no replicas, no persistence), made with
// `redis-cli --cluster create`. cluster-require-full-coverage is off, so a dead node takes only
// its own slots away (as the store's fault tests want); each node keeps its nodes.conf in a
// directory of its own, so a killed node restarted rejoins with its slots (and no data).
class RedisCluster {
public:
    explicit RedisCluster(int n = 3, bool create = true) {
        char tmpl[] = "/tmp/lazyattn-redis-cluster-XXXXXX";
        dir_ = mkdtemp(tmpl);
        for (int i = 0; i < n; ++i) {
            const int port = free_cluster_port();
            const std::string dir = dir_ + "/" + std::to_string(i);
            mkdir(dir.c_str(), 0700);
            nodes_.push_back(std::make_unique<RedisServer>(
                port, "",
                std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file", dir + "/nodes.conf",
                                         "--dir", dir, "--cluster-node-timeout", "3000",
                                         "--cluster-require-full-coverage", "no"}));
            if (!nodes_.back()->running()) return;
        }
        if (!create) {
            ok_ = true;
            return;
        }
        std::string cmd = "redis-cli --cluster create";
        for (const auto& s : nodes_) cmd += " " + s->address();
        cmd += " --cluster-replicas 0 --cluster-yes >/dev/null 2>&1";
        if (std::system(cmd.c_str()) != 0) return;
        ok_ = wait_ok();
    }
    ~RedisCluster() {
        nodes_.clear();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    bool ok() const { return ok_; }
    int size() const { return int(nodes_.size()); }
    RedisServer& node(int i) { return *nodes_[size_t(i)]; }
    std::string url(int seed = 0) const { return nodes_[size_t(seed)]->url(); }
    // A redis-cli command against node i; its output.
    std::string cli(int i, const std::string& args) {
        return command_output("redis-cli -p " + std::to_string(nodes_[size_t(i)]->port()) + " " + args + " 2>&1");
    }
    std::string id(int i) { return cli(i, "CLUSTER MYID"); }
    int keyslot(const std::string& key) { return std::atoi(cli(0, "CLUSTER KEYSLOT '" + key + "'").c_str()); }
    // Every running node says cluster_state:ok and agrees on its slots (up to 20 s).
    bool wait_ok() {
        for (int t = 0; t < 400; ++t) {
            bool all = true;
            for (int i = 0; i < size() && all; ++i) {
                all = !nodes_[size_t(i)]->running() ||
                      cli(i, "CLUSTER INFO").find("cluster_state:ok") != std::string::npos;
            }
            if (all &&
                (std::system(("redis-cli --cluster check " + nodes_[0]->address() + " >/dev/null 2>&1").c_str()) == 0))
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }
    // Node i killed and started again without its nodes.conf: a node of a new identity at the old
    // address, in no cluster (the others then list the old one without an address: ["", 0, id]).
    bool reborn(int i) {
        nodes_[size_t(i)]->kill();
        std::error_code ec;
        std::filesystem::remove(dir_ + "/" + std::to_string(i) + "/nodes.conf", ec);
        return nodes_[size_t(i)]->start();
    }
    // Moves `slots` slots from node `from` to node `to` (redis-cli --cluster reshard); true on success.
    bool reshard(int from, int to, int slots) {
        const std::string cmd = "redis-cli --cluster reshard " + nodes_[0]->address() + " --cluster-from " + id(from) +
                                " --cluster-to " + id(to) + " --cluster-slots " + std::to_string(slots) +
                                " --cluster-yes >/dev/null 2>&1";
        return std::system(cmd.c_str()) == 0;
    }

private:
    std::string dir_;
    std::vector<std::unique_ptr<RedisServer>> nodes_;
    bool ok_ = false;
};

}  // namespace lazyattn::store::testing
