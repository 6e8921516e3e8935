#include "cli/command.h"

namespace lazyattn::cli {
namespace {

constexpr CommandGroup kBench = {"bench", "benchmarks"};

const CommandEntry kCommands[] = {
    {nullptr, generate_command},    {nullptr, info_command},          {nullptr, tokenize_command},
    {nullptr, rag_demo_command},    {&kBench, bench_speed_command},   {&kBench, bench_rag_command},
    {&kBench, bench_store_command}, {&kBench, bench_quality_command}, {nullptr, serve_command},
    {nullptr, precompute_command},
};

}  // namespace

std::span<const CommandEntry> command_table() { return kCommands; }

}  // namespace lazyattn::cli
