// The lazyattn binary end to end on a synthetic model: exit codes, JSON output, documents
// reused across repeated runs in one process.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loader/gguf_writer.h"
#include "synthetic_model_fixture.h"

namespace lazyattn {
namespace {

struct Run {
    int exit_code;
    std::string out;
};

Run run_cli(const std::string& args) {
    const std::string cmd = std::string(LAZYATTN_CLI_PATH) + " " + args + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string model_arg() {
    loader::SyntheticModelOptions o;
    return "--model " + testing::synthetic_model_path(o, "cli");
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
    std::vector<nlohmann::json> lines;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
    }
    return lines;
}

TEST(Cli, BadArgumentsExitWithCodeTwo) {
    EXPECT_EQ(run_cli("").exit_code, 2);
    EXPECT_EQ(run_cli("frobnicate").exit_code, 2);
    EXPECT_EQ(run_cli("generate").exit_code, 2);  // --prompt is required
    EXPECT_EQ(run_cli("generate --prompt hi --max-tokens -3").exit_code, 2);
    EXPECT_EQ(run_cli("generate --prompt hi --cache-mode sideways").exit_code, 2);
    EXPECT_EQ(run_cli("generate --prompt hi --top-p 7").exit_code, 2);
    EXPECT_EQ(run_cli("--help").exit_code, 0);
}

TEST(Cli, TokenizePrintsTheIdsTheServerWouldUse) {
    auto r = run_cli("tokenize " + model_arg() + " --json 'the cat sat on'");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_GT(j["count"].get<int>(), 0);
    std::string joined;
    for (const auto& p : j["pieces"]) joined += p["piece"].get<std::string>();
    EXPECT_EQ(joined, "the cat sat on");
    auto plain = run_cli("tokenize " + model_arg() + " 'the cat sat on'");
    EXPECT_EQ(std::count(plain.out.begin(), plain.out.end(), '\n'), j["count"].get<int>());
}

// A vocabulary-only SentencePiece GGUF (no tensors), as llama.cpp's ggml-vocab-*.gguf files are:
// 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, 259 ▁, 260 h, 261 e, 262 l, 263 o, 264 he, 265 ll,
// 266 hell, 267 hello, 268 ▁hello, 269 <|im_start|> (control).
std::string spm_vocab_only_gguf() {
    const std::string sp = "\xE2\x96\x81";
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char hex[7];
        std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
        tokens.push_back(hex);
        types.push_back(6);
    }
    for (const std::string& t :
         {sp, std::string("h"), std::string("e"), std::string("l"), std::string("o"), std::string("he"),
          std::string("ll"), std::string("hell"), std::string("hello"), sp + "hello"}) {
        tokens.push_back(t);
        types.push_back(1);
    }
    tokens.push_back("<|im_start|>");
    types.push_back(3);
    std::vector<float> scores(tokens.size(), 0.0f);
    for (size_t i = 259; i < 269; ++i) scores[i] = -static_cast<float>(tokens[i].size());
    loader::GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_f32_array("tokenizer.ggml.scores", scores);
    w.add_i32_array("tokenizer.ggml.token_type", types);
    w.add_u32("tokenizer.ggml.bos_token_id", 1);
    w.add_u32("tokenizer.ggml.eos_token_id", 2);
    const std::string path = ::testing::TempDir() + "lazyattn_cli_spm_vocab.gguf";
    EXPECT_TRUE(w.write(path).ok());
    return path;
}

std::vector<int> tokens_of(const std::string& args) {
    const auto r = run_cli("tokenize " + args + " --json");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
    if (r.exit_code != 0) return {};
    return nlohmann::json::parse(r.out)["tokens"].get<std::vector<int>>();
}

TEST(Cli, TokenizeReadsAVocabularyOnlyGguf) {
    const std::string model = "--model " + spm_vocab_only_gguf();
    // No BOS unless --add-special; the space prefix makes "hello" one token.
    EXPECT_EQ(tokens_of(model + " --prompt hello"), (std::vector<int>{268}));
    EXPECT_EQ(tokens_of(model + " --prompt hello --add-special"), (std::vector<int>{1, 268}));
    // Special-token text stays text unless --parse-special.
    const std::vector<int> plain = tokens_of(model + " --prompt '<|im_start|>hello'");
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 269), 0);
    EXPECT_FALSE(plain.empty());
    EXPECT_EQ(tokens_of(model + " --prompt '<|im_start|>hello' --parse-special"), (std::vector<int>{269, 268}));
}

TEST(Cli, ServeFlagsTakeLlamaCppAndVllmSpellingsAndTheEnvironment) {
    // Bad values under every spelling are refused with exit 2 before anything loads.
    EXPECT_EQ(run_cli("serve -np 0").exit_code, 2);
    EXPECT_EQ(run_cli("serve --parallel 0").exit_code, 2);
    EXPECT_EQ(run_cli("serve --max-num-batched-tokens 0").exit_code, 2);
    EXPECT_EQ(run_cli("serve -c -1").exit_code, 2);
    EXPECT_EQ(run_cli("serve --kv-cache-dtype fp99").exit_code, 2);
    const std::string env_cmd = "LAZYATTN_ARG_MAX_NUM_SEQS=abc " + std::string(LAZYATTN_CLI_PATH) + " serve 2>&1";
    FILE* p = popen(env_cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    const int status = pclose(p);
    EXPECT_EQ(WEXITSTATUS(status), 2) << out;
    EXPECT_NE(out.find("max-num-seqs"), std::string::npos) << out;
    // Help names the values of --kv-dtype, not enum integers.
    auto help = run_cli("serve --help");
    EXPECT_NE(help.out.find("f16|bf16|f32"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("LAZYATTN_ARG_MAX_NUM_SEQS"), std::string::npos) << help.out;
}

TEST(Cli, BadModelFileIsARuntimeErrorNotACrash) {
    EXPECT_EQ(run_cli("info --model /nonexistent.gguf").exit_code, 1);
    EXPECT_EQ(run_cli("generate --prompt hi --model " LAZYATTN_SOURCE_DIR "/README.md").exit_code, 1);
}

TEST(Cli, GenerateJsonHasTheDocumentedFields) {
    auto r = run_cli("generate " + model_arg() + " --prompt 'the cat sat on' --max-tokens 5 --ignore-eos --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 1u);
    for (const char* key : {"text", "token_ids", "num_prompt_tokens", "ttft_ms", "decode_tok_per_s", "prefill_tokens",
                            "reused_tokens", "segments_hit", "segments_missed"}) {
        EXPECT_TRUE(lines[0].contains(key)) << key;
    }
    EXPECT_EQ(lines[0]["token_ids"].size(), 5u);
    EXPECT_GT(lines[0]["peak_blocks"].get<int>(), 0);
}

TEST(Cli, AKvPoolLargerThanMemoryIsAnErrorNotACrash) {
    // ~95 TiB: more than any machine has; refused with exit code 2 (it used to die of bad_alloc).
    EXPECT_EQ(run_cli("generate " + model_arg() + " --prompt hi --max-tokens 1 --kv-cache-mb 100000000").exit_code, 2);
}

TEST(Cli, RepeatedRunsWithShuffledDocumentsReuseEveryDocument) {
    const std::string docs =
        "--doc-text 'the quick brown fox jumps over the lazy dog' "
        "--doc-text 'a stitch in time saves nine and then some more' "
        "--doc-text 'all that glitters is not gold, said the old man' ";
    auto r = run_cli("generate " + model_arg() + " --chat " + docs +
                     "--prompt 'what is gold?' --max-tokens 4 --ignore-eos --repeat 3 --shuffle-docs --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto runs = json_lines(r.out);
    ASSERT_EQ(runs.size(), 3u);
    EXPECT_EQ(runs[0]["segments_missed"], 4);  // system preamble + 3 documents
    for (int i = 1; i < 3; ++i) {
        EXPECT_EQ(runs[i]["segments_hit"], 4);
        EXPECT_EQ(runs[i]["segments_missed"], 0);
        EXPECT_EQ(runs[i]["token_ids"].size(), 4u);
    }
    // Recompute mode reuses nothing, run after run.
    auto p = run_cli("generate " + model_arg() + " --chat " + docs +
                     "--prompt 'what is gold?' --max-tokens 4 --ignore-eos --repeat 2 --json --cache-mode none");
    auto none_runs = json_lines(p.out);
    ASSERT_EQ(none_runs.size(), 2u);
    EXPECT_EQ(none_runs[1]["reused_tokens"], 0);
}

}  // namespace
}  // namespace lazyattn
