// LoadedModel: a backend, the model on it and its tokenizer, opened together from one GGUF file.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

struct LoadedModel {
    std::unique_ptr<backend::Backend> backend;
    std::unique_ptr<model::Model> model;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// Opens `path` on a CPU backend with `num_threads` threads (0 = all).
Expected<LoadedModel> load_model(const std::string& path, int num_threads, const model::WeightOptions& options = {});

}  // namespace lazyattn::engine
