// Safe to expose, fourth round (the issue of that name): the server-side defects, each over a real
// socket against a real `lazyattn serve` (or its command line where the defect is there).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "redis_server.h"
#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

// A `lazyattn ARGS...` child whose exit the test waits for itself (ServerProcess waits for a
// listening server; these cases must stop before one, or be stopped during start-up).
class CliChild {
public:
    CliChild(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env = {})
        : log_path_("/tmp/lazyattn-security4-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++)) {
        std::vector<std::string> argv_s = {LAZYATTN_CLI_PATH};
        argv_s.insert(argv_s.end(), args.begin(), args.end());
        pid_ = ::fork();
        if (pid_ == 0) {
            const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            ::dup2(log, 1);
            ::dup2(log, 2);
            for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
            std::vector<char*> argv;
            for (auto& a : argv_s) argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
    }
    ~CliChild() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        ::unlink(log_path_.c_str());
    }
    CliChild(const CliChild&) = delete;
    CliChild& operator=(const CliChild&) = delete;

    void signal(int sig) const { ::kill(pid_, sig); }
    // The exit code; 1000 + the signal when one killed it; -1 when it still runs after `timeout_s`.
    int wait_exit(double timeout_s) {
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < timeout_s) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return -1;
    }
    std::string output() const {
        std::ifstream in(log_path_);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

private:
    static inline int counter_ = 0;
    pid_t pid_ = -1;
    std::string log_path_;
};

std::vector<std::string> serve_check(std::vector<std::string> extra) {
    std::vector<std::string> args = {"serve", "--port", "0"};
    for (std::string& a : server_args()) args.push_back(std::move(a));
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--check");
    return args;
}

// `--api-key ','` split to no key, and the parser took the next word (`--check`) as the key;
// LAZYATTN_ARG_API_KEY='' (or ',') served with no authentication at all. Each is refused at
// start, naming the setting, however it is given.
TEST(ServerSecurity4, AnApiKeySettingThatYieldsNoKeyIsRefused) {
    const std::vector<std::vector<std::string>> spelled = {
        {"--api-key", ","}, {"--api-key", ",,"}, {"--api-key", "a,,b"}, {"--api-key", "a key"}, {"--api-key", ""}};
    for (const auto& flags : spelled) {
        CliChild c(serve_check(flags));
        EXPECT_EQ(c.wait_exit(60), 2) << flags[1] << ": " << c.output();
        EXPECT_NE(c.output().find("--api-key"), std::string::npos) << c.output();
        EXPECT_EQ(c.output().find("listening on"), std::string::npos) << c.output();
    }
    for (const char* value : {"", ",", " "}) {
        CliChild c(serve_check({}), {{"LAZYATTN_ARG_API_KEY", value}});
        EXPECT_EQ(c.wait_exit(60), 2) << "'" << value << "': " << c.output();
        EXPECT_EQ(c.output().find("listening on"), std::string::npos) << c.output();
    }
    // Keys that are keys still serve, comma-separated or repeated.
    CliChild ok(serve_check({"--api-key", "k1,k2", "--api-key", "k3"}));
    EXPECT_EQ(ok.wait_exit(60), 0) << ok.output();
    EXPECT_NE(ok.output().find("API keys required"), std::string::npos) << ok.output();
}

// Anthropic's clients send X-Api-Key (llama-server takes it): the same key works there.
TEST(ServerSecurity4, XApiKeyIsAKeyToo) {
    ServerProcess s(server_args({"--api-key", "secret-key"}));
    ASSERT_TRUE(s.started()) << s.log();
    const std::string body = completion_body(false);
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), body, {"-H", "'X-Api-Key: secret-key'"}).status, 200);
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), body, {"-H", "'X-Api-Key: wrong'"}).status, 401);
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), body, {"-H", "'X-Api-Key;'"}).status, 401);
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), body).status, 401);
}

// Long documents, each different, that take the engine a while to compute one after another.
std::vector<std::string> long_documents(int n, int words) {
    std::vector<std::string> docs;
    for (int d = 0; d < n; ++d) {
        std::string text;
        for (int w = 0; w < words; ++w) text += "w" + std::to_string(d) + "x" + std::to_string(w % 97) + " ";
        docs.push_back(text);
    }
    return docs;
}

int num_pinned(const ServerProcess& s) {
    const json list = parse_or_null(curl("GET", s.url("/v1/documents")).body);
    int pinned = 0;
    for (const auto& d : list["data"]) pinned += d["pinned"].get<bool>() ? 1 : 0;
    return pinned;
}

// A POST /v1/documents whose client left kept computing and left every document pinned, with
// nobody to unpin them. Now the document in progress is cancelled and the batch's pins undone.
TEST(ServerSecurity4, APinBatchIsCancelledWhenItsClientLeaves) {
    ServerProcess s({"--model", server_model_path(8192), "--kv-cache-mb", "256", "--threads", "1"});
    ASSERT_TRUE(s.started()) << s.log();
    const json body = {{"documents", long_documents(24, 900)}};
    {
        RawHttpStream client(s.port(), "POST", "/v1/documents", body.dump());
        ASSERT_TRUE(client.connected());
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        client.close();  // gone long before 24 long documents are computed
    }
    // The engine is idle again once the batch was given up; its pins are undone by then.
    double disconnects = -1;
    for (int i = 0; i < 300 && disconnects < 1; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        disconnects = metric_value(metrics_text(s), "lazyattn_client_disconnects_total");
    }
    EXPECT_GE(disconnects, 1) << metrics_text(s);
    EXPECT_EQ(num_pinned(s), 0);
    // The same batch from a client that waits is pinned whole.
    const auto r = curl("POST", s.url("/v1/documents"), json{{"documents", long_documents(3, 200)}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(num_pinned(s), 3);
}

// document_reuse strings came back whole in their 400 (1 MB in, 1-2 MB out); a DELETE id of 8 KB
// too. Every client string is quoted by its first bytes only.
TEST(ServerSecurity4, ErrorsQuoteNoClientStringWhole) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const std::string big(1 << 20, 'x');
    for (const std::string& reuse : {"recompute=1@" + big, "neighbours=" + big, "scale=" + big, big}) {
        const auto r = curl("POST", s.url("/v1/chat/completions"), completion_body(true, {{"document_reuse", reuse}}));
        expect_api_error(r, 400);
        EXPECT_LT(r.body.size(), 2048u) << r.body.substr(0, 300);
    }
    const auto r = curl("DELETE", s.url("/v1/documents/" + std::string(8000, 'd')));
    expect_api_error(r, 404);
    EXPECT_LT(r.body.size(), 1024u) << r.body.substr(0, 300);
    expect_still_serving(s);
}

// --known-documents read any file whole (/dev/zero: 6.5 GB of RSS in 8 s) and a FIFO blocked
// start-up for good. Only regular files are read, and a plain file only as far as a document is
// indexed.
TEST(ServerSecurity4, KnownDocumentsReadsRegularFilesOnly) {
    {
        CliChild c(serve_check({"--known-documents", "/dev/zero"}));
        EXPECT_EQ(c.wait_exit(60), 2) << c.output();
        EXPECT_NE(c.output().find("not a regular file"), std::string::npos) << c.output();
    }
    const std::string fifo = "/tmp/lazyattn-security4-fifo-" + std::to_string(::getpid());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    {
        CliChild c(serve_check({"--known-documents", fifo}));
        const int code = c.wait_exit(60);
        EXPECT_EQ(code, 2) << c.output();
        EXPECT_NE(c.output().find("not a regular file"), std::string::npos) << c.output();
    }
    ::unlink(fifo.c_str());
    // A plain file longer than the index keeps a document is skipped, not read whole.
    const std::string big = "/tmp/lazyattn-security4-big-" + std::to_string(::getpid()) + ".txt";
    {
        std::ofstream out(big);
        out << std::string((1 << 20) + 10, 'a');
    }
    CliChild c(serve_check({"--known-documents", big}));
    EXPECT_EQ(c.wait_exit(60), 0) << c.output();
    EXPECT_NE(c.output().find("0 untitled documents"), std::string::npos) << c.output();
    ::unlink(big.c_str());
}

// SIGTERM and SIGINT were blocked from the first line but only taken once serving began: a
// start-up held by a store that does not answer (here for up to 60 s) ignored them. They now
// stop it at once.
TEST(ServerSecurity4, ASignalStopsStartUp) {
    store::testing::SilentRedis hung;
    for (const int sig : {SIGTERM, SIGINT}) {
        std::vector<std::string> args = {"serve", "--port", "0"};
        for (std::string& a : server_args({"--kv-store", hung.url(), "--kv-store-timeout-ms", "60000"}))
            args.push_back(std::move(a));
        CliChild c(args);
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // well into the store's probe
        c.signal(sig);
        const int code = c.wait_exit(20);
        // 128 + the signal from the taker, or killed by it when it came before the taker existed.
        EXPECT_TRUE(code == 128 + sig || code == 1000 + sig) << code << ": " << c.output();
        EXPECT_EQ(c.output().find("listening on"), std::string::npos) << c.output();
    }
}

// `serve -fa MODEL` took the model's path as -fa's value and served the embedded model.
TEST(ServerSecurity4, AFlagsOptionalValueNeverTakesTheModel) {
    const std::string model = server_model_path();
    for (const std::vector<std::string>& flags : {std::vector<std::string>{"serve", "-fa", model},
                                                  {"serve", "--flash-attn", model},
                                                  {"serve", model, "-fa", "on"},
                                                  {"serve", "-fa", "auto", model}}) {
        std::vector<std::string> args = flags;
        args.insert(args.end(), {"--port", "0", "--kv-cache-mb", "16", "--check"});
        CliChild c(args);
        EXPECT_EQ(c.wait_exit(60), 0) << c.output();
        EXPECT_NE(c.output().find("model " + model.substr(model.rfind('/') + 1)), std::string::npos) << c.output();
        EXPECT_NE(c.output().find("--flash-attn"), std::string::npos) << c.output();  // its one warning
    }
}

}  // namespace
}  // namespace lazyattn::testing
