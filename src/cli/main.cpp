// The lazyattn binary: builds the command line from the command table (cli/command.h), parses it
// into the chosen command's options (the only place configuration is read) and runs it. Bad
// arguments print usage, a "did you mean" for a mistyped name, and exit with code 2.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_options.h"
#include "cli/command.h"
#include "cli/compat_flags.h"
#include "cli/help_format.h"

#ifdef LAZYATTN_CUDA_BUILT
#include "backend/cuda/cuda_engine_backend.h"
#include "backend/device.h"
#endif

int main(int argc, char** argv) {
    using namespace lazyattn::cli;
#ifdef LAZYATTN_CUDA_BUILT
    constexpr bool kCudaBuilt = true;
#else
    constexpr bool kCudaBuilt = false;
#endif
    if (argc == 2 && (std::string(argv[1]) == "--version" || std::string(argv[1]) == "-V")) {
        std::cout << version_text(kCudaBuilt);
        return 0;
    }
#ifdef LAZYATTN_CUDA_BUILT
    // --device cuda makes the CUDA backend this binary links (backend::make_backend).
    lazyattn::backend::set_cuda_backend_factory(&lazyattn::backend::cuda::make_cuda_engine_backend);
#endif
    CLI::App app{"lazyattn: a RAG inference engine with position-agnostic document KV caching"};
    app.formatter(std::make_shared<HelpFormatter>());
    app.require_subcommand(1);
    // Listed for --help; main answers it above, before the parser asks for a subcommand.
    bool version_asked = false;
    app.add_flag("-V,--version", version_asked,
                 "print the version, git commit, build type, CPU ISA and CUDA support, then exit");
    // Every subcommand from the table, groups (`bench`) made when their first command comes.
    std::map<const CommandGroup*, CLI::App*> groups;
    std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> commands;
    for (const CommandEntry& entry : command_table()) {
        CLI::App* parent = &app;
        if (entry.group != nullptr) {
            CLI::App*& group = groups[entry.group];
            if (group == nullptr) {
                group = app.add_subcommand(entry.group->name, entry.group->help);
                group->require_subcommand(1);
            }
            parent = group;
        }
        std::unique_ptr<Command> command = entry.make();
        CLI::App* node = command->add_to(*parent);
        // The peers' engine flags on every command that computes (those with a KV type), after the
        // command's own options so that a name it has (generate's --seed) stays its own.
        if (node->get_option_no_throw("--kv-dtype") != nullptr)
            add_compat_flags(node, false, command->compat_warnings());
        commands.emplace_back(node, std::move(command));
    }
    capture_defaults(app);

    try {
        std::vector<std::string> args = normalize_arguments(argc, argv);
        args.erase(args.begin());                // CLI11 takes the arguments without the program name,
        std::reverse(args.begin(), args.end());  // in reverse order
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        if (code != 0) std::cerr << did_you_mean(app);
        return code == 0 ? 0 : 2;
    }
    for (auto& [node, command] : commands) {
        if (node->parsed()) return command->run();
    }
    return 2;
}
