// Where the embedded default model (SmolLM2-135M-Instruct) is found: the model commands use when
// --model is not given, and the tokenizer of synthetic models.
#pragma once

#include <string>

namespace lazyattn::loader {

// $LAZYATTN_MODEL, else models/SmolLM2-135M-Instruct.Q4_1.gguf beside the binary's build
// folder (or any folder above it), else in the current directory. Returns "" if none exists.
std::string embedded_model_path();

}  // namespace lazyattn::loader
