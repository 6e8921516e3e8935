// The real SmolLM2 tokenizer, loaded once per test binary. Tests that need it skip with a clear
// message when models/ has no model file (the fast suite must pass on a bare checkout).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::tokenizer::testing_support {

struct LoadedModel {
    std::unique_ptr<loader::GgufFile> file;
    std::unique_ptr<Tokenizer> tokenizer;
};

// nullptr when the model file is absent; fails the calling test if it exists but does not load.
inline const LoadedModel* smollm_model() {
    static const LoadedModel* model = []() -> const LoadedModel* {
        if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) return nullptr;
        auto file = loader::GgufFile::open(LAZYATTN_MODEL_PATH);
        if (!file.ok()) {
            ADD_FAILURE() << "cannot open " << LAZYATTN_MODEL_PATH << ": " << file.status().to_string();
            return nullptr;
        }
        auto tok = Tokenizer::from_gguf(**file);
        if (!tok.ok()) {
            ADD_FAILURE() << "cannot build the tokenizer: " << tok.status().to_string();
            return nullptr;
        }
        return new LoadedModel{std::move(file).value(), std::move(tok).value()};
    }();
    return model;
}

}  // namespace lazyattn::tokenizer::testing_support

#define LA_REQUIRE_SMOLLM(var)                                                              \
    const auto* var##_model = ::lazyattn::tokenizer::testing_support::smollm_model();       \
    if (var##_model == nullptr) GTEST_SKIP() << "model not found: " << LAZYATTN_MODEL_PATH; \
    const ::lazyattn::tokenizer::Tokenizer& var = *var##_model->tokenizer
