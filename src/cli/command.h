// The subcommands of the lazyattn binary as one table. Each command's file defines how it adds
// itself to the command line (name, help, options) and what it runs; command_table.cpp lists them
// in the order the help shows them, and main only walks that list.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli/cli_options.h"
#include "core/log.h"

namespace lazyattn::cli {

class Command {
public:
    virtual ~Command() = default;
    // Adds the subcommand, its help text and its options to `parent`; returns its node, whose
    // parsed() tells main to run it.
    virtual CLI::App* add_to(CLI::App& parent) = 0;
    // After a successful parse: configures logging from the command's options and runs it,
    // returning the process exit code (0 ok, 1 run-time error, 2 bad arguments).
    virtual int run() = 0;
    // Where the command's llama-server / vLLM flags that do not apply put their warnings.
    virtual std::vector<std::string>& compat_warnings() = 0;
};

// A command over an options struct with a `common` member: `add` registers the options into the
// struct, `run` takes it once parsed.
template <typename Options>
class OptionsCommand final : public Command {
public:
    using AddFn = CLI::App* (*)(CLI::App& parent, Options& o);
    using RunFn = int (*)(const Options& o);
    OptionsCommand(AddFn add, RunFn run) : add_(add), run_(run) {}
    CLI::App* add_to(CLI::App& parent) override { return add_(parent, options_); }
    std::vector<std::string>& compat_warnings() override { return options_.common.compat_warnings; }
    int run() override {
        configure_logging(options_.common);
        for (const std::string& w : options_.common.compat_warnings) log::warn(w);
        return run_(options_);
    }

private:
    AddFn add_;
    RunFn run_;
    Options options_;
};

template <typename Options>
std::unique_ptr<Command> make_command(CLI::App* (*add)(CLI::App&, Options&), int (*run)(const Options&)) {
    return std::make_unique<OptionsCommand<Options>>(add, run);
}

// A group of subcommands (`lazyattn bench ...`): its name and help.
struct CommandGroup {
    const char* name;
    const char* help;
};

struct CommandEntry {
    const CommandGroup* group;  // nullptr: a top-level command
    std::unique_ptr<Command> (*make)();
};

// Every subcommand, in help order.
std::span<const CommandEntry> command_table();

// The factories, each defined in its command's file.
std::unique_ptr<Command> generate_command();
std::unique_ptr<Command> info_command();
std::unique_ptr<Command> tokenize_command();
std::unique_ptr<Command> rag_demo_command();
std::unique_ptr<Command> bench_speed_command();
std::unique_ptr<Command> bench_rag_command();
std::unique_ptr<Command> bench_store_command();
std::unique_ptr<Command> bench_quality_command();
std::unique_ptr<Command> serve_command();
std::unique_ptr<Command> precompute_command();

}  // namespace lazyattn::cli
