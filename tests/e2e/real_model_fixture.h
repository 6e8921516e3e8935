// The real SmolLM2 model, loaded once per test binary; tests skip with a message when the file
// is absent (make test always installs it).
#pragma once

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/loading/loaded_model.h"

namespace lazyattn::testing {

inline engine::LoadedModel* real_model() {
    static engine::LoadedModel* model = []() -> engine::LoadedModel* {
        if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) return nullptr;
        auto lm = engine::load_model(LAZYATTN_MODEL_PATH, 2);
        EXPECT_TRUE(lm.ok()) << lm.status().to_string();
        return lm.ok() ? new engine::LoadedModel(std::move(lm).value()) : nullptr;
    }();
    return model;
}

#define LA_REQUIRE_REAL_MODEL()                       \
    if (::lazyattn::testing::real_model() == nullptr) \
    GTEST_SKIP() << "real model not found at " LAZYATTN_MODEL_PATH " (run make test to install)"

inline nlohmann::json load_golden(const std::string& name) {
    std::ifstream in(std::string(LAZYATTN_TEST_DATA_DIR) + "/" + name);
    EXPECT_TRUE(in.good()) << "missing golden file tests/data/" << name << " (scripts/make_golden.py)";
    return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

}  // namespace lazyattn::testing
