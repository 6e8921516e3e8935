#include "engine/loaded_model.h"

namespace lazyattn::engine {

Expected<LoadedModel> load_model(const std::string& path, int num_threads, const model::WeightOptions& options) {
    LoadedModel lm;
    lm.backend = backend::make_cpu_backend(num_threads);
    LA_ASSIGN_OR_RETURN(lm.model, model::Model::load(path, lm.backend.get(), options));
    LA_ASSIGN_OR_RETURN(lm.tokenizer, tokenizer::Tokenizer::from_gguf(lm.model->gguf()));
    if (lm.tokenizer->vocab_size() != lm.model->config().vocab_size) {
        return corrupt("tokenizer has " + std::to_string(lm.tokenizer->vocab_size()) +
                       " tokens but the model's vocabulary is " + std::to_string(lm.model->config().vocab_size));
    }
    return lm;
}

}  // namespace lazyattn::engine
