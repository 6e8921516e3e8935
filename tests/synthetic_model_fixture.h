// Writes tiny random-weight GGUF models (a few hundred KB) to a temporary folder once per test
// binary, so model tests run in seconds without the real model.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "synthetic/synthetic_model.h"

namespace lazyattn::testing {

inline std::string synthetic_model_path(const synthetic::SyntheticModelOptions& options, const std::string& tag) {
    static std::map<std::string, std::string> written;
    auto it = written.find(tag);
    if (it != written.end()) return it->second;
    const auto dir = std::filesystem::temp_directory_path() / ("lazyattn-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / (tag + ".gguf")).string();
    const Status st = synthetic::write_synthetic_model(path, options);
    EXPECT_TRUE(st.ok()) << st.to_string();
    written[tag] = path;
    return path;
}

}  // namespace lazyattn::testing
