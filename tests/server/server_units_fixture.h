// The model the server's unit tests build requests for: a small synthetic llama with a chat
// template, loaded once per test binary and shared by every suite that derives from this.
#pragma once

#include <gtest/gtest.h>

#include "engine/loading/loaded_model.h"
#include "synthetic_model_fixture.h"
#include "tokenizer/chat_template.h"

namespace lazyattn::server {

class ServerUnitsModel : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (model_ != nullptr) return;
        synthetic::SyntheticModelOptions o;
        auto lm = engine::load_model(testing::synthetic_model_path(o, "server-units"), 1);
        ASSERT_TRUE(lm.ok()) << lm.status().to_string();
        auto chat = tokenizer::chat_template_from_gguf(lm->model->gguf());
        ASSERT_TRUE(chat.ok());
        chat_ = *chat;
        model_ = new engine::LoadedModel(std::move(lm).value());
    }
    static inline engine::LoadedModel* model_ = nullptr;
    static inline tokenizer::ChatTemplate chat_;
};

}  // namespace lazyattn::server
