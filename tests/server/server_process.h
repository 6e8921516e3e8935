// Test support: a real `lazyattn serve` child process on a free loopback port, and plain HTTP
// clients for it (curl as a subprocess, and a raw socket for streams that must be read slowly or
// abandoned). Everything talks over real sockets.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace lazyattn::testing {

class ServerProcess {
public:
    // Starts `lazyattn serve --port 0 <args>` and waits (up to 30 s) for its "listening on" line.
    // Unless `args` name a preset or `product_defaults`, `--quality fast` comes first: the tests
    // compare answers and counters with plain lazy's, and the default preset (balanced) would
    // damp every document's sinks and swap in conditioned copies as background work finishes.
    // The default itself is tested with product_defaults (test_server_quality.cpp).
    explicit ServerProcess(const std::vector<std::string>& args, bool product_defaults = false);
    ~ServerProcess();  // SIGKILL if still running
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;

    bool started() const { return port_ > 0; }
    pid_t pid() const { return pid_; }
    int port() const { return port_; }
    std::string url(const std::string& path) const;
    void send_signal(int sig) const;
    // The exit code, -1 on timeout, -2 when killed by a signal.
    int wait_exit(double timeout_s);
    std::string log() const;  // what the server wrote to stderr

private:
    pid_t pid_ = -1;
    int port_ = 0;
    std::string log_path_;
};

struct HttpResult {
    int status = 0;                              // 0: no response
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
};

// One request with curl (--data-binary from a file, so any bytes go through unchanged).
HttpResult curl(const std::string& method, const std::string& url, const std::string& body = "",
                const std::vector<std::string>& extra_args = {});

// The data payloads of a text/event-stream body, in order ("[DONE]" included).
std::vector<std::string> sse_payloads(const std::string& body);

// A raw HTTP/1.1 request over a socket that the test reads at its own pace, or drops.
class RawHttpStream {
public:
    RawHttpStream(int port, const std::string& method, const std::string& path, const std::string& body);
    // Connects and sends `raw` exactly as given (any bytes: partial requests, pipelines, garbage).
    RawHttpStream(int port, const std::string& raw);
    // Sends more bytes; false when the connection is gone.
    bool send(const std::string& bytes);
    ~RawHttpStream();
    bool connected() const { return fd_ >= 0; }
    // Reads until `needle` has appeared in everything received so far (or timeout); true if so.
    bool read_until(const std::string& needle, double timeout_s);
    // Reads until the server closes the response (end of chunked body or connection).
    void read_to_end(double timeout_s);
    const std::string& received() const { return received_; }
    // Shuts down the write side (a FIN) and keeps reading: a client done sending.
    void half_close();
    void close();

private:
    int fd_ = -1;
    std::string received_;
};

// The value of a sample in Prometheus text, named with its labels other than model_name
// ("lazyattn_x", "lazyattn_x{outcome=\"cancelled\"}"); -1 if absent.
double metric_value(const std::string& metrics_text, const std::string& name);

}  // namespace lazyattn::testing
