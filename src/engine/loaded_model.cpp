#include "engine/loaded_model.h"

#include <filesystem>

#include "core/log.h"
#include "core/timer.h"

namespace lazyattn::engine {

Expected<LoadedModel> load_model(const std::string& path, int num_threads, const model::WeightOptions& options) {
    const double t0 = now_ms();
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    log::info("loading model", {{"path", path}, {"file_mib", ec ? -1.0 : double(bytes) / (1 << 20)}});
    LoadedModel lm;
    lm.backend = backend::make_cpu_backend(num_threads);
    LA_ASSIGN_OR_RETURN(lm.model, model::Model::load(path, lm.backend.get(), options));
    LA_ASSIGN_OR_RETURN(lm.tokenizer, tokenizer::Tokenizer::from_gguf(lm.model->gguf()));
    if (lm.tokenizer->vocab_size() != lm.model->config().vocab_size) {
        return corrupt("tokenizer has " + std::to_string(lm.tokenizer->vocab_size()) +
                       " tokens but the model's vocabulary is " + std::to_string(lm.model->config().vocab_size));
    }
    const model::ModelConfig& c = lm.model->config();
    log::info("model loaded", {{"layers", c.num_layers},
                               {"hidden", c.hidden_dim},
                               {"vocab", c.vocab_size},
                               {"context", c.context_length},
                               {"seconds", (now_ms() - t0) / 1000.0}});
    return lm;
}

}  // namespace lazyattn::engine
