#include "cli/data_files.h"

#include <filesystem>

namespace lazyattn::cli {

Expected<std::string> find_data_file(const std::string& path, const std::string& flag) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(path, ec)) return path;
    if (fs::path(path).is_relative()) {
        const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
        for (fs::path dir = exe.parent_path(); !ec && !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
            if (fs::exists(dir / path)) return (dir / path).string();
        }
    }
    return not_found(flag + " " + path + ": no such file here or beside the lazyattn binary; pass " + flag +
                     " FILE (a QA JSONL file such as the repository's data/2wiki_sample.jsonl)");
}

void resolve_data_file_after_parse(CLI::App* cmd, std::string& path, const std::string& flag) {
    cmd->final_callback([&path, flag] {
        auto found = find_data_file(path, flag);
        if (!found.ok()) throw CLI::ValidationError(found.status().message());
        path = *found;
    });
}

}  // namespace lazyattn::cli
