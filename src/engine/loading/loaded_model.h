// LoadedModel: a backend, the model on it and its tokenizer, opened together from one GGUF file.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/device.h"
#include "core/status.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

struct LoadedModel {
    std::unique_ptr<backend::Backend> backend;
    std::unique_ptr<model::Model> model;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// Opens the GGUF file `model` names, or generates a synthetic:NAME[:TYPE][:seed=N] model in memory
// (loader/synthetic_preset.h), on a CPU backend with `num_threads` threads (0 = all).
Expected<LoadedModel> load_model(const std::string& model, int num_threads, const model::WeightOptions& options = {});
// The same on the backend of `device` (backend::make_backend): a device this build or machine
// cannot compute on is refused before anything is loaded.
Expected<LoadedModel> load_model(const std::string& model, backend::Device device, int num_threads,
                                 const model::WeightOptions& options = {});

}  // namespace lazyattn::engine
