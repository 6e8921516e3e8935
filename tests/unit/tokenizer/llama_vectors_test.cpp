// llama.cpp's own tokenizer test vectors (its test-tokenizer-0): for every vocabulary lazyattn
// claims, models/ggml-vocab-NAME.gguf is loaded through Tokenizer::from_gguf and each input of
// ggml-vocab-NAME.gguf.inp must tokenize to exactly the ids on the matching line of .out, with
// add_special = false and parse_special = false as llama.cpp's test runs them.
//
// The files come from llama-cpp-python's sdist (never committed): the ctest fixture
// fetch_llama_vocabs.sh writes LAZYATTN_VOCAB_FIXTURE_FILE naming the folder, or the reason it
// could not fetch from PyPI (the test then skips saying so). Run by hand, the test reads
// LLAMA_VOCAB_DIR from the environment instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::tokenizer {
namespace {

struct VocabFolder {
    std::string path;         // empty when unavailable
    std::string skip_reason;  // why, when unavailable
};

VocabFolder locate_vocab_folder() {
    std::ifstream fixture(LAZYATTN_VOCAB_FIXTURE_FILE);
    std::string line;
    if (fixture && std::getline(fixture, line)) {
        if (line.rfind("LLAMA_VOCAB_DIR=", 0) == 0) return {line.substr(16), {}};
        if (line.rfind("SKIPPED=", 0) == 0) return {{}, line.substr(8)};
        return {{}, "unreadable fixture file " LAZYATTN_VOCAB_FIXTURE_FILE ": " + line};
    }
    if (const char* env = std::getenv("LLAMA_VOCAB_DIR"); env != nullptr && *env != '\0') return {env, {}};
    return {{},
            "no vocabulary folder: run through ctest (fixture llama_vocabs) or set LLAMA_VOCAB_DIR "
            "(scripts/build_llama_tools.sh --sources prints it)"};
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string strip(const std::string& s) {
    const size_t begin = s.find_first_not_of(" \t\r\n");
    if (begin == std::string::npos) return {};
    return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

struct Case {
    std::string text;
    std::vector<TokenId> ids;
};

// llama.cpp's format: inputs separated by "\n__ggml_vocab_test__\n" (a trailing separator ends the
// list), one line of space-separated ids per input. Repeated inputs keep their last expectation,
// as llama.cpp's map of cases does.
std::vector<Case> read_cases(const std::string& gguf_path) {
    const std::string raw = read_file(gguf_path + ".inp");
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    for (size_t pos = 0; pos < raw.size();) {
        const size_t next = raw.find(separator, pos);
        if (next == std::string::npos) {
            inputs.push_back(raw.substr(pos));
            break;
        }
        inputs.push_back(raw.substr(pos, next - pos));
        pos = next + separator.size();
    }
    std::ifstream out(gguf_path + ".out");
    std::vector<std::string> lines;
    for (std::string line; std::getline(out, line);) lines.push_back(line);
    EXPECT_EQ(inputs.size(), lines.size()) << gguf_path << ": .inp and .out list different numbers of cases";

    std::vector<Case> cases;
    for (size_t i = 0; i < std::min(inputs.size(), lines.size()); ++i) {
        Case c{inputs[i], {}};
        std::istringstream ids(strip(lines[i]));
        for (TokenId id; ids >> id;) c.ids.push_back(id);
        const auto earlier = std::find_if(cases.begin(), cases.end(), [&](const Case& e) { return e.text == c.text; });
        if (earlier != cases.end()) {
            earlier->ids = std::move(c.ids);
        } else {
            cases.push_back(std::move(c));
        }
    }
    return cases;
}

std::string ids_to_string(const std::vector<TokenId>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
    return "[" + s + "]";
}

class LlamaVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaVectors, EveryCaseMatchesLlamaCpp) {
    const VocabFolder folder = locate_vocab_folder();
    if (folder.path.empty()) GTEST_SKIP() << folder.skip_reason;
    const std::string path = folder.path + "/ggml-vocab-" + GetParam() + ".gguf";
    ASSERT_TRUE(std::filesystem::exists(path + ".inp")) << path << ".inp is missing";

    auto file = loader::GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto tok = Tokenizer::from_gguf(**file);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();

    const std::vector<Case> cases = read_cases(path);
    EXPECT_GE(cases.size(), 30u) << "too few cases read from " << path << ".inp";
    size_t num_mismatches = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::vector<TokenId> actual = (*tok)->encode(cases[i].text, false, false);
        if (actual == cases[i].ids) continue;
        ++num_mismatches;
        ADD_FAILURE() << GetParam() << " case " << i << " " << testing::PrintToString(cases[i].text)
                      << "\n  llama.cpp: " << ids_to_string(cases[i].ids) << "\n  lazyattn:  " << ids_to_string(actual);
    }
    EXPECT_EQ(num_mismatches, 0u) << "of " << cases.size() << " cases";
}

// The vocabularies lazyattn claims: SentencePiece (llama-spm, phi-3), Gemma 4's SentencePiece-style
// BPE, and byte-level BPE with each implemented pre-tokenizer.
INSTANTIATE_TEST_SUITE_P(Vocabularies, LlamaVectors,
                         ::testing::Values("llama-spm", "phi-3", "gemma-4", "llama-bpe", "qwen2", "qwen35", "gpt-2",
                                           "command-r", "deepseek-coder", "falcon", "mpt", "refact", "starcoder"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param;
                             for (char& c : name) {
                                 if (c == '-') c = '_';
                             }
                             return name;
                         });

}  // namespace
}  // namespace lazyattn::tokenizer
