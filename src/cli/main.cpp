// The lazyattn binary: builds the command line from the command table (cli/command.h), parses it
// into the chosen command's options (the only place configuration is read) and runs it. Bad
// arguments print usage and exit with code 2.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "cli/cli_options.h"
#include "cli/command.h"

#ifdef LAZYATTN_CUDA_BUILT
#include "backend/device.h"
#include "backend/cuda/cuda_engine_backend.h"
#endif

int main(int argc, char** argv) {
    using namespace lazyattn::cli;
#ifdef LAZYATTN_CUDA_BUILT
    // --device cuda makes the CUDA backend this binary links (backend::make_backend).
    lazyattn::backend::set_cuda_backend_factory(&lazyattn::backend::cuda::make_cuda_engine_backend);
#endif
    CLI::App app{"lazyattn: a RAG inference engine with position-agnostic document KV caching"};
    app.require_subcommand(1);
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
        commands.emplace_back(node, std::move(command));
    }

    try {
        std::vector<std::string> args = normalize_arguments(argc, argv);
        args.erase(args.begin());                // CLI11 takes the arguments without the program name,
        std::reverse(args.begin(), args.end());  // in reverse order
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    for (auto& [node, command] : commands) {
        if (node->parsed()) return command->run();
    }
    return 2;
}
