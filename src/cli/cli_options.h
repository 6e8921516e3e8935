// Command-line registration shared by the subcommands: the options every model command takes,
// the serve command's options, the compatibility spellings users bring from llama.cpp and vLLM,
// and the environment-variable fallback of every server flag.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/status.h"
#include "engine/engine_config.h"
#include "kernels/params/kv_dtype.h"

namespace lazyattn::cli {

// --model/-m, --threads/-t, --log-level, --log-format and (with_kv: commands that compute)
// --kv-dtype/--kv-cache-dtype, --cache-type-k/-v and --device.
void add_common_options(CLI::App* cmd, CommonOptions& o, bool with_kv = true);
// The cache-mode choices of engine/cache_mode.h's table as a CLI11 check (segments_only: the
// modes that cache segments), and the help text listing them.
CLI::Validator cache_mode_check(bool segments_only = false);
std::string cache_mode_help();
// The engine settings every model command takes from its common options (KV types, device, the
// persistent store's tiers and writer); each command adds its own on top.
engine::EngineConfig engine_config_for(const CommonOptions& o);
// Applies --log-level and --log-format (checked by the parser) to the process's logger.
void configure_logging(const CommonOptions& o);

// --query-layers: the layers whose attention scores document tokens for @query selection, on
// `cmd` into `layers`; check_query_layers refuses any outside the model's [0, num_layers).
void add_query_layers_option(CLI::App* cmd, std::vector<int32_t>& layers);
Status check_query_layers(const std::vector<int32_t>& layers, int32_t num_layers);

// `lazyattn serve` and its options; each is also read from LAZYATTN_ARG_<LONG_NAME> (dashes as
// underscores, upper case: --max-num-seqs -> LAZYATTN_ARG_MAX_NUM_SEQS), as llama.cpp's server
// reads LLAMA_ARG_*. A flag on the command line wins over the environment.
CLI::App* add_serve_command(CLI::App& app, ServeOptions& o);

// A KV type as the command line spells it (ours, vLLM's and llama.cpp's names; "auto" is f16),
// or kInvalidArgument naming the accepted ones.
Expected<kernels::KvDtype> parse_kv_dtype_option(const std::string& name);

// llama.cpp's multi-letter single-dash options ("-np", "-ctk", "-ctv") rewritten to their long names, which
// CLI11 cannot declare as short options; a compatibility flag's optional value joined to it when
// the next word is one (compat_optional_values), else its first value.
std::vector<std::string> normalize_arguments(int argc, char** argv);

// The environment variable that backs a long option name: "--max-num-seqs" -> "LAZYATTN_ARG_MAX_NUM_SEQS".
std::string env_name_for(const std::string& long_name);

}  // namespace lazyattn::cli
