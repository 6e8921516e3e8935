#include "engine/loading/loaded_model.h"

#include <filesystem>

#include "core/log.h"
#include "core/timer.h"
#include "loader/embedded_model.h"
#include "synthetic/synthetic_preset.h"

namespace lazyattn::engine {

Expected<LoadedModel> load_model(const std::string& model, int num_threads, const model::WeightOptions& options) {
    return load_model(model, backend::Device::kCpu, num_threads, options);
}

Expected<LoadedModel> load_model(const std::string& model, backend::Device device, int num_threads,
                                 const model::WeightOptions& options) {
    const double t0 = now_ms();
    LoadedModel lm;
    LA_ASSIGN_OR_RETURN(lm.backend, backend::make_backend(device, num_threads));
    // synthetic:NAME is generated in memory here; its tokenizer is the embedded model's.
    LA_ASSIGN_OR_RETURN(const std::string path,
                        synthetic::resolve_model_source(model, loader::embedded_model_path(), num_threads));
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    // A file that cannot be sized is left to Model::load, whose error names the reason.
    if (!ec) log::info("loading model", {{"path", model}, {"file_mib", double(bytes) / (1 << 20)}});
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
