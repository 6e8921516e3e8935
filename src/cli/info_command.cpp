// `lazyattn info`: the model description read from the GGUF metadata.
#include <iostream>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "loader/gguf_file.h"
#include "model/model_config.h"

namespace lazyattn::cli {

int run_info(const CommonOptions& o) {
    const std::string path = o.model_path.empty() ? default_model_path() : o.model_path;
    if (path.empty()) {
        std::cerr << "error: no model found; run `make run` once or pass --model FILE\n";
        return 1;
    }
    auto file = loader::GgufFile::open(path);
    if (!file.ok()) {
        std::cerr << "error: " << file.status().to_string() << "\n";
        return 1;
    }
    auto config = model::ModelConfig::from_gguf(**file);
    if (!config.ok()) {
        std::cerr << "error: " << config.status().to_string() << "\n";
        return 1;
    }
    std::cout << "file: " << path << "\nGGUF version: " << (*file)->version()
              << "\ntensors: " << (*file)->tensors().size() << "\n" << config->describe();
    auto pre = (*file)->get_string("tokenizer.ggml.pre");
    auto tok_model = (*file)->get_string("tokenizer.ggml.model");
    std::cout << "tokenizer: " << (tok_model.ok() ? *tok_model : "?") << " (pre-tokenizer "
              << (pre.ok() ? *pre : "default") << ")\n";
    return 0;
}

}  // namespace lazyattn::cli
