#include "cli/model_path.h"

#include "loader/embedded_model.h"
#include "synthetic/synthetic_preset.h"

namespace lazyattn::cli {

std::string default_model_path() { return loader::embedded_model_path(); }

Expected<std::unique_ptr<loader::GgufFile>> open_model_gguf(const std::string& model_path) {
    std::string path = model_path.empty() ? default_model_path() : model_path;
    if (path.empty()) return not_found("no model found; run `make run` once or pass --model FILE");
    LA_ASSIGN_OR_RETURN(path, synthetic::resolve_model_source(path, default_model_path(), 0));
    return loader::GgufFile::open(path);
}

}  // namespace lazyattn::cli
