// Every chat template in the pinned llama.cpp's models/templates/ passes lazyattn's start-up check
// (JinjaChatTemplate::compile renders a one-message chat exactly as a request without tools
// renders) and renders a plain conversation, or is on kExpectedFailures with the reason. A
// template on the list that starts rendering fails the test too, so the list stays true.
#include <gtest/gtest.h>

#include <map>

#include "tokenizer/chat_template.h"
#include "tokenizer/jinja_chat_template.h"
#include "unit/tokenizer/llama_cpp_sources.h"

namespace lazyattn::tokenizer {
namespace {

namespace fs = std::filesystem;

// File name -> why it cannot render a plain conversation (a substring of the error).
// (None: firefunction-v2 adds `functions`, undefined without tools, to a string, which renders
// as llama.cpp's engine renders it: the string alone.)
const std::map<std::string, std::string> kExpectedFailures = {};

std::string render_plain(const std::string& source) {
    ChatTemplateTokens tokens;
    tokens.bos_token = "<s>";
    tokens.eos_token = "</s>";
    auto compiled = JinjaChatTemplate::compile(source, tokens);
    if (!compiled.ok()) return "start-up check: " + compiled.status().message();
    for (const auto& messages : std::vector<std::vector<ChatMessage>>{
             {{"system", "You are terse."}, {"user", "Name a colour."}, {"assistant", "Blue."}, {"user", "Again?"}},
             {{"user", "Name a colour."}, {"assistant", "Blue."}, {"user", "Again?"}}}) {
        auto pieces = (*compiled)->render(messages, true);
        if (pieces.ok()) {
            std::string text;
            for (const auto& p : *pieces) text += p.text;
            if (text.find("Again?") == std::string::npos) return "the last message is not in: " + text;
            return "";
        }
        if (messages.front().role != "system") return pieces.status().message();
        // Some families refuse a system role: the conversation without one must render.
    }
    return "unreachable";
}

TEST(LlamaCppTemplates, EachPassesTheStartUpCheckAndRendersAPlainConversation) {
    const fs::path tree = testing_support::llama_cpp_sources();
    if (tree.empty()) GTEST_SKIP() << testing_support::kNoLlamaCppSources;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(tree / "models" / "templates")) {
        if (e.path().extension() == ".jinja") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    ASSERT_GE(files.size(), 30u);
    int rendered = 0;
    for (const fs::path& file : files) {
        const std::string name = file.filename().string();
        const std::string error = render_plain(testing_support::read_text_file(file));
        const auto expected = kExpectedFailures.find(name);
        if (expected == kExpectedFailures.end()) {
            EXPECT_EQ(error, "") << name;
            rendered += error.empty();
        } else {
            EXPECT_NE(error, "") << name << " renders now: take it off kExpectedFailures";
            EXPECT_NE(error.find(expected->second), std::string::npos) << name << ": " << error;
        }
    }
    std::cout << rendered << " of " << files.size() << " templates render; " << kExpectedFailures.size()
              << " expected failures\n";
}

}  // namespace
}  // namespace lazyattn::tokenizer
