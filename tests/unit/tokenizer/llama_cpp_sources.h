// Where the pinned llama.cpp's sources are, for tests that read them at test time (never copied
// into git): $LLAMA_CPP_SRC, else the tree scripts/build_llama_tools.sh --sources extracts,
// .llama-tools/llama_cpp_python-<VERSION>/vendor/llama.cpp with VERSION the pin in
// scripts/install_llama_cpp.sh. Tests skip, saying how to fetch them, when the tree is absent.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace lazyattn::testing_support {

inline std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The llama.cpp tree, or "" when it is not there.
inline std::filesystem::path llama_cpp_sources() {
    namespace fs = std::filesystem;
    if (const char* env = std::getenv("LLAMA_CPP_SRC"); env != nullptr && *env != '\0') return env;
    const fs::path root = LAZYATTN_SOURCE_DIR;
    const std::string pin_script = read_text_file(root / "scripts" / "install_llama_cpp.sh");
    const size_t at = pin_script.find("\nVERSION=");
    if (at == std::string::npos) return {};
    const size_t begin = at + 9;
    const std::string version = pin_script.substr(begin, pin_script.find_first_of(" \n#", begin) - begin);
    const char* tools_env = std::getenv("LLAMA_TOOLS_DIR");
    const fs::path tools = tools_env != nullptr && *tools_env != '\0' ? fs::path(tools_env) : root / ".llama-tools";
    const fs::path tree = tools / ("llama_cpp_python-" + version) / "vendor" / "llama.cpp";
    std::error_code ec;
    return fs::is_directory(tree / "models" / "templates", ec) ? tree : fs::path();
}

inline constexpr const char* kNoLlamaCppSources =
    "the pinned llama.cpp sources are absent (run scripts/build_llama_tools.sh --sources, or set LLAMA_CPP_SRC)";

}  // namespace lazyattn::testing_support
