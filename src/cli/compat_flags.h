// The flags users bring from llama-server and vLLM command lines that lazyattn has no option of its
// own for. Each is accepted with one warning saying why it does not apply here (GPU layers on a
// one-device engine, flash attention and prefix caching that are always on, ...), or refused
// naming what to use instead. The flags lazyattn honours under the peers' spellings (-m, -c,
// --ctx-size, --max-model-len, -np, --alias, --served-model-name, --kv-cache-dtype, -b, ...) are
// names of its own options (cli_options.cpp); docs/api.md tables both.
#pragma once

#include <CLI/CLI.hpp>

#include <span>
#include <string>
#include <vector>

namespace lazyattn::cli {

enum class CompatAction {
    kWarn,    // accepted; one warning line says why it has no effect here
    kRefuse,  // exit 2, naming the lazyattn equivalent (or that there is none)
};

struct CompatFlag {
    const char* names;  // CLI11 spelling, a long name first: "--n-gpu-layers,--gpu-layers", "--seed,-s"
                        // (multi-letter short forms such as -ngl are rewritten to a long name by
                        // normalize_arguments: compat_short_spellings)
    const char* peer;   // "llama-server", "vLLM" or both
    int num_values;     // 0: a flag; 1 or 2: takes that many values; -1: an optional value (-fa [on|off|auto])
    CompatAction action;
    const char* why;     // the warning's or the refusal's reason
    const char* accept;  // kRefuse only: the one value still accepted with a warning ("1" for -tp 1), or nullptr
    bool serve_only;     // false: also on every command that computes (generate, bench, ...)
};

// Every such flag, in the order docs/api.md lists them.
std::span<const CompatFlag> compat_flags();

// The multi-letter single-dash spellings of llama-server ("-ngl", "-fa", "-np", ...) and the long
// names they stand for; CLI11 declares only one-letter short options.
std::span<const std::pair<const char*, const char*>> compat_short_spellings();

// The values a table flag with an optional value (num_values -1) takes, by its first long name
// ("--flash-attn": on, off, auto, ...); empty for any other name. normalize_arguments joins such a
// value to its flag, so a word that is not one of them (`serve -fa MODEL`) is never taken as it.
std::span<const char* const> compat_optional_values(const std::string& long_name);

// Registers the table's flags whose serve_only is `serve_only` on `cmd`, under the "Compatibility"
// help group, leaving out any whose name `cmd` already has (call it after the command's own
// options; main adds the engine flags to every computing command). A given kWarn flag
// appends its warning to `warnings` (printed once the parse succeeds); a kRefuse flag fails the
// parse with its reason.
void add_compat_flags(CLI::App* cmd, bool serve_only, std::vector<std::string>& warnings);

}  // namespace lazyattn::cli
