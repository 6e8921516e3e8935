// The bundled data files (--data of bench rag, bench quality, bench store, rag-demo) are found
// from any working directory, as the default model is: a relative path that is not here is
// looked up beside the lazyattn binary and in the folders above it (where the repository's data/ is).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "core/status.h"

namespace lazyattn::cli {

// `path` as given when it exists; else, for a relative path, the same path under the folders
// above the lazyattn binary; else kNotFound naming `flag`.
Expected<std::string> find_data_file(const std::string& path, const std::string& flag);

// Registers on `cmd` (once its options are parsed) the lookup of `path` with find_data_file; a
// file found nowhere is a parse error naming `flag`.
void resolve_data_file_after_parse(CLI::App* cmd, std::string& path, const std::string& flag);

}  // namespace lazyattn::cli
