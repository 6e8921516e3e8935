#include "server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace lazyattn::testing {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string temp_path(const std::string& tag) {
    static std::atomic<int> counter{0};
    return "/tmp/lazyattn-server-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + tag;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& data) {
    std::ofstream out(path, std::ios::binary);
    out << data;
}

// Reads the child's stdout until the "listening on http://host:PORT" line; the port, or 0.
int read_port(int fd, double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string text;
    while (seconds_since(t0) < timeout_s) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        char buf[512];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return 0;  // the server exited
        text.append(buf, size_t(n));
        const size_t at = text.find("listening on http://");
        const size_t eol = at == std::string::npos ? std::string::npos : text.find('\n', at);
        if (eol == std::string::npos) continue;
        const std::string line = text.substr(at, eol - at);
        const size_t colon = line.find(':', std::string("listening on http://").size());
        return colon == std::string::npos ? 0 : std::atoi(line.c_str() + colon + 1);
    }
    return 0;
}

}  // namespace

ServerProcess::ServerProcess(const std::vector<std::string>& args, bool product_defaults)
    : log_path_(temp_path("serve.log")) {
    int out[2];
    if (::pipe(out) != 0) return;
    std::vector<std::string> argv_s = {LAZYATTN_CLI_PATH, "serve", "--port", "0"};
    const bool names_preset = std::any_of(args.begin(), args.end(), [](const std::string& a) {
        return a == "--quality" || a.rfind("--quality=", 0) == 0;
    });
    if (!product_defaults && !names_preset) argv_s.insert(argv_s.end(), {"--quality", "fast"});
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
        ::dup2(out[1], 1);
        const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (log >= 0) ::dup2(log, 2);
        ::close(out[0]);
        std::vector<char*> argv;
        for (auto& a : argv_s) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    port_ = read_port(out[0], 30.0);
    ::close(out[0]);  // the server prints nothing more on stdout
}

ServerProcess::~ServerProcess() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    std::remove(log_path_.c_str());
}

std::string ServerProcess::url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void ServerProcess::send_signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
}

int ServerProcess::wait_exit(double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    while (pid_ > 0 && seconds_since(t0) < timeout_s) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
}

std::string ServerProcess::log() const { return read_file(log_path_); }

HttpResult curl(const std::string& method, const std::string& url, const std::string& body,
                const std::vector<std::string>& extra_args) {
    const std::string in = temp_path("body"), out = temp_path("out"), hdr = temp_path("hdr");
    std::string cmd = "curl -s --max-time 60 -o " + out + " -D " + hdr + " -w '%{http_code}' -X " + method;
    if (!body.empty()) {
        write_file(in, body);
        cmd += " -H 'Content-Type: application/json' --data-binary @" + in;
    }
    for (const auto& a : extra_args) cmd += " " + a;
    cmd += " '" + url + "'";
    HttpResult r;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char code[16] = {0};
        const size_t n = std::fread(code, 1, sizeof code - 1, p);
        code[n] = 0;
        ::pclose(p);
        r.status = std::atoi(code);
    }
    r.body = read_file(out);
    std::istringstream headers(read_file(hdr));
    for (std::string line; std::getline(headers, line);) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string name = line.substr(0, colon), value = line.substr(colon + 1);
        for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        while (!value.empty() && (value.front() == ' ')) value.erase(value.begin());
        while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
        r.headers[name] = value;
    }
    for (const auto& f : {in, out, hdr}) std::remove(f.c_str());
    return r;
}

std::vector<std::string> sse_payloads(const std::string& body) {
    std::vector<std::string> out;
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
    }
    return out;
}

RawHttpStream::RawHttpStream(int port, const std::string& method, const std::string& path, const std::string& body)
    : RawHttpStream(port, method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                              "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
                              body) {}

RawHttpStream::RawHttpStream(int port, const std::string& raw) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close();
        return;
    }
    if (!send(raw)) close();
}

bool RawHttpStream::send(const std::string& bytes) {
    size_t sent = 0;
    while (fd_ >= 0 && sent < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return false;
        sent += size_t(n);
    }
    return fd_ >= 0;
}

RawHttpStream::~RawHttpStream() { close(); }

bool RawHttpStream::read_until(const std::string& needle, double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    while (received_.find(needle) == std::string::npos) {
        if (fd_ < 0 || seconds_since(t0) > timeout_s) return false;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) return received_.find(needle) != std::string::npos;
        received_.append(buf, size_t(n));
    }
    return true;
}

void RawHttpStream::read_to_end(double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    while (fd_ >= 0 && seconds_since(t0) < timeout_s) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) return;
        received_.append(buf, size_t(n));
    }
}

void RawHttpStream::half_close() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void RawHttpStream::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

double metric_value(const std::string& text, const std::string& name) {
    // Every series carries model_name="..."; it is dropped from the line's labels before comparing,
    // so `name` is written without it ("lazyattn_x" or "lazyattn_x{outcome=\"c\"}").
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        const size_t space = line.rfind(' ');
        std::string series = line.substr(0, space);
        const size_t at = series.find("model_name=\"");
        if (at != std::string::npos) {
            size_t end = series.find('"', at + 12);
            while (end != std::string::npos && series[end - 1] == '\\') end = series.find('"', end + 1);
            size_t cut_end = end + 1;
            if (cut_end < series.size() && series[cut_end] == ',') ++cut_end;
            series.erase(at, cut_end - at);
            if (series.size() >= 2 && series.compare(series.size() - 2, 2, "{}") == 0) series.resize(series.size() - 2);
            if (!series.empty() && series.back() == '}' && series[series.size() - 2] == ',')
                series.erase(series.size() - 2, 1);
        }
        if (series == name) return std::atof(line.c_str() + space + 1);
    }
    return -1;
}

}  // namespace lazyattn::testing
