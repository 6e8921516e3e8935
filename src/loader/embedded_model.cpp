#include "loader/embedded_model.h"

#include <cstdlib>
#include <filesystem>

namespace lazyattn::loader {

std::string embedded_model_path() {
    namespace fs = std::filesystem;
    const char* env = std::getenv("LAZYATTN_MODEL");
    if (env != nullptr && *env != '\0') return env;
    const char* kName = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
            if (fs::exists(dir / kName)) return (dir / kName).string();
        }
    }
    if (fs::exists(kName)) return kName;
    return "";
}

}  // namespace lazyattn::loader
