// The lazyattn binary run as a child process for the CLI tests (test_cli*.cpp): its exit code and
// output, the synthetic model they run, JSON-lines output read back.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "synthetic_model_fixture.h"

namespace lazyattn::cli_test {

struct Run {
    int exit_code;
    std::string out;
};

// A shell command line's exit code and stdout.
inline Run run_shell(const std::string& cmd) {
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The CLI with these arguments: stdout only, or with stderr after it (with_stderr: the error messages).
inline Run run_cli(const std::string& args, bool with_stderr = false) {
    return run_shell(std::string(LAZYATTN_CLI_PATH) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

inline std::string model_arg() {
    synthetic::SyntheticModelOptions o;
    return "--model " + testing::synthetic_model_path(o, "cli");
}

inline std::vector<nlohmann::json> json_lines(const std::string& out) {
    std::vector<nlohmann::json> lines;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
    }
    return lines;
}

}  // namespace lazyattn::cli_test
