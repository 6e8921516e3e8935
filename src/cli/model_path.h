// Where the embedded default model is found when --model is not given.
#pragma once

#include <string>

namespace lazyattn::cli {

// $LAZYATTN_MODEL, else models/SmolLM2-135M-Instruct.Q4_1.gguf beside the binary's build
// folder, else in the current directory. Returns "" if none exists.
std::string default_model_path();

}  // namespace lazyattn::cli
