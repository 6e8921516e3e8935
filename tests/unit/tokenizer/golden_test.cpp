// Token ids identical to llama.cpp's for every case of tests/data/golden_tokens.json (produced by
// scripts/make_golden.py with llama-cpp-python). The test skips while the file is absent; once it
// exists, every case must match exactly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model_fixture.h"

namespace lazyattn::tokenizer {
namespace {

const std::string kGoldenPath = std::string(LAZYATTN_TEST_DATA_DIR) + "/golden_tokens.json";

std::string ids_to_string(const std::vector<TokenId>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

TEST(GoldenTokens, MatchLlamaCpp) {
    if (!std::filesystem::exists(kGoldenPath)) GTEST_SKIP() << "no golden file: " << kGoldenPath;
    LA_REQUIRE_SMOLLM(tok);

    std::ifstream in(kGoldenPath);
    const nlohmann::json golden = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(golden.is_discarded()) << kGoldenPath << " is not valid JSON";
    ASSERT_TRUE(golden.contains("cases") && golden["cases"].is_array());
    if (golden.contains("model")) {
        EXPECT_NE(golden["model"].get<std::string>().find("SmolLM2-135M-Instruct"), std::string::npos)
            << "golden file was made for another model";
    }

    const auto& cases = golden["cases"];
    EXPECT_GE(cases.size(), 60u);
    size_t num_mismatches = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        const std::string text = c.at("text").get<std::string>();
        const bool add_special = c.at("add_special").get<bool>();
        const bool parse_special = c.at("parse_special").get<bool>();
        const auto expected = c.at("ids").get<std::vector<TokenId>>();
        const std::vector<TokenId> actual = tok.encode(text, add_special, parse_special);
        if (actual == expected) continue;
        ++num_mismatches;
        ADD_FAILURE() << "case " << i << " text=" << testing::PrintToString(text) << " add_special=" << add_special
                      << " parse_special=" << parse_special << "\n  llama.cpp: " << ids_to_string(expected)
                      << "\n  lazyattn:  " << ids_to_string(actual);
    }
    EXPECT_EQ(num_mismatches, 0u) << "of " << cases.size() << " cases";
}

}  // namespace
}  // namespace lazyattn::tokenizer
