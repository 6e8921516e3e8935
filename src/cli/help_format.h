// How the command line talks to a person: the help text (every option's default, value choices
// instead of CLI11's validator descriptions), "did you mean" for a mistyped option or command, and
// `--version` (version, git commit, build type, the CPU ISA the kernels use, CUDA on or off).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace lazyattn::cli {

// Help lines as `--port INT  port to listen on (default: 8080)`: a choice list shows as a|b|c,
// numeric checks as the type with a short range, a flag's name without its {false} default.
class HelpFormatter : public CLI::Formatter {
public:
    std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;
    std::string make_option_opts(const CLI::Option* opt) const override;
    std::string make_option_desc(const CLI::Option* opt) const override;
};

// Records the current value of every option of `app` and its subcommands as the default the help
// shows (options bound to a variable; call once every option is added, before parsing).
void capture_defaults(CLI::App& app);

// After a parse error: the closest option or command name to each unexpected argument of the
// deepest subcommand parsed, as "did you mean --model?" lines ("" when nothing is close).
std::string did_you_mean(CLI::App& app);

// The `--version` text: one line per fact (cuda_built: the binary links the CUDA backend).
std::string version_text(bool cuda_built);

// What responses carry as `system_fingerprint`: "b<version>-<commit>" (llama-server's shape,
// "b<build>-<commit>", which its clients check), naming the build that answered.
std::string system_fingerprint();

}  // namespace lazyattn::cli
