// The lazyattn binary end to end on a synthetic model: exit codes, JSON output, documents
// reused across repeated runs in one process.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "loader/gguf_writer.h"
#include "redis_server.h"
#include "synthetic_model_fixture.h"

namespace lazyattn {
namespace {

using cli_test::json_lines;
using cli_test::model_arg;
using cli_test::Run;
using cli_test::run_cli;
using cli_test::run_shell;

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
    const auto env = run_shell("LAZYATTN_ARG_MAX_NUM_SEQS=abc " + std::string(LAZYATTN_CLI_PATH) + " serve 2>&1");
    EXPECT_EQ(env.exit_code, 2) << env.out;
    EXPECT_NE(env.out.find("max-num-seqs"), std::string::npos) << env.out;
    // Help names the values of --kv-dtype, not enum integers.
    auto help = run_cli("serve --help");
    EXPECT_NE(help.out.find("f16|bf16|f32"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("LAZYATTN_ARG_MAX_NUM_SEQS"), std::string::npos) << help.out;
}

// --device cuda on every model command: a run-time error (exit 1) that says why (no CUDA in this
// build, or the CUDA backend does not run the engine yet), before any model is read; an unknown
// device is an argument error.
TEST(Cli, DeviceCudaIsRefusedWithTheReason) {
    for (const std::string cmd : {"generate --prompt hi --max-tokens 1", "bench speed --prompt-tokens 4 --gen-tokens 1",
                                  "bench rag", "serve --port 0"}) {
        const auto r = run_cli(cmd + " " + model_arg() + " --device cuda", true);
        EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("--device cuda"), std::string::npos) << cmd << ": " << r.out;
    }
    EXPECT_EQ(run_cli("generate --prompt hi --device tpu").exit_code, 2);
    EXPECT_NE(run_cli("bench speed --help").out.find("--device"), std::string::npos);
}

// KV types under our, llama.cpp's and vLLM's spellings; K and V apart; what cannot be is refused
// with the reason: fp8 (naming q8_0), an unknown type, q8_0 on a head_dim 32 does not divide.
TEST(Cli, KvTypesTakeEverySpellingAndRefuseWhatCannotBe) {
    synthetic::SyntheticModelOptions o;
    o.head_dim = 32;
    const std::string hd32 = "--model " + testing::synthetic_model_path(o, "cli-hd32");
    for (const std::string kv : {"--kv-dtype q8_0", "--kv-cache-dtype q4_0", "-ctk q8_0 -ctv f16",
                                 "--cache-type-k q4_0 --cache-type-v q8_0", "--kv-cache-dtype bfloat16"}) {
        const auto r =
            run_cli("generate " + hd32 + " --prompt 'the cat' --max-tokens 3 --ignore-eos --json " + kv, true);
        EXPECT_EQ(r.exit_code, 0) << kv << ": " << r.out;
        EXPECT_NE(r.out.find("\"token_ids\""), std::string::npos) << kv << ": " << r.out;
    }
    const auto fp8 = run_cli("generate " + hd32 + " --prompt hi --kv-cache-dtype fp8", true);
    EXPECT_EQ(fp8.exit_code, 2);
    EXPECT_NE(fp8.out.find("q8_0"), std::string::npos) << fp8.out;
    EXPECT_EQ(run_cli("generate " + hd32 + " --prompt hi -ctk q5_1").exit_code, 2);
    const auto hd16 = run_cli("generate " + model_arg() + " --prompt hi --max-tokens 1 --kv-dtype q4_0", true);
    EXPECT_NE(hd16.exit_code, 0);
    EXPECT_NE(hd16.out.find("groups of 32"), std::string::npos) << hd16.out;
    const auto info = run_cli("info " + hd32);
    EXPECT_NE(info.out.find("q4_0"), std::string::npos) << info.out;
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
    // ~95 TiB: more than any machine has; refused with exit code 2 (it used to die of bad_alloc),
    // saying what the pool needs and which flag to lower (any usage error also exits with 2).
    const auto r = run_cli("generate " + model_arg() + " --prompt hi --max-tokens 1 --kv-cache-mb 100000000", true);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.out.find("error: resource exhausted: the KV pool of"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("lower --kv-cache-mb"), std::string::npos) << r.out;
}

TEST(Cli, ServeRefusesADocumentDelimiterItCannotUseAtStartUp) {
    // Refused before a port opens, naming the flag and the reason.
    for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
             {"--document-delimiter 'regex:(('", "does not compile"},
             {"--document-delimiter 'regex:x*'", "matches the empty string"},
             {"--document-delimiter '\\q'", "unknown escape"},
             {"--documents-from delimiter", "needs --document-delimiter"},
             {"--documents-message assistant", "unknown documents message"}}) {
        const auto r = run_cli("serve " + model_arg() + " --port 0 " + flags, true);
        EXPECT_NE(r.exit_code, 0) << flags;
        EXPECT_NE(r.out.find(says), std::string::npos) << flags << ": " << r.out;
        EXPECT_EQ(r.out.find("listening on"), std::string::npos) << flags;
    }
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

// --model synthetic:NAME on a command: a real-shaped random model with the embedded tokenizer.
TEST(Cli, SyntheticModelsRunAndUnknownOnesAreNamed) {
    auto r = run_cli("generate --model synthetic:tiny --prompt 'the cat' --max-tokens 3 --ignore-eos --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(json_lines(r.out).at(0)["token_ids"].size(), 3u);
    auto info = run_cli("info --model synthetic:tiny:f16");
    EXPECT_EQ(info.exit_code, 0) << info.out;
    EXPECT_NE(info.out.find("F16"), std::string::npos) << info.out;
    EXPECT_NE(run_cli("generate --model synthetic:nope --prompt hi --max-tokens 1").exit_code, 0);
}

// `lazyattn precompute` fills a store directory from a corpus (JSON lines and plain text), skips
// what is there on a second run, and `generate --kv-store` then loads every document from it.
TEST(Cli, PrecomputeFillsTheStoreAndGenerateLoadsFromIt) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("lazyattn-cli-precompute-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "store");
    {
        std::ofstream corpus(dir / "corpus.jsonl");
        corpus << R"({"text": "the quick brown fox jumps over the lazy dog"})"
               << "\n\n"
               << R"({"documents": [{"text": "a stitch in time saves nine"}, {"title": "T", "text": "gold"}]})"
               << "\n";
        std::ofstream(dir / "doc.txt") << "all that glitters is not gold";
    }
    const std::string store = "--kv-store " + (dir / "store").string();
    const std::string corpus =
        " --corpus " + (dir / "corpus.jsonl").string() + " --corpus " + (dir / "doc.txt").string();
    auto first = run_cli("precompute " + model_arg() + " " + store + corpus);
    ASSERT_EQ(first.exit_code, 0) << first.out;
    auto j = nlohmann::json::parse(first.out);
    EXPECT_EQ(j["documents"], 4);
    EXPECT_EQ(j["computed"], 4);
    auto second = nlohmann::json::parse(run_cli("precompute " + model_arg() + " " + store + corpus).out);
    EXPECT_EQ(second["computed"], 0);
    EXPECT_EQ(second["already_present"], 4);

    auto g = run_cli("generate " + model_arg() + " " + store + " --doc-text 'a stitch in time saves nine' --doc " +
                     (dir / "doc.txt").string() +
                     " --doc-text 'the quick brown fox jumps over the lazy dog' --prompt 'what?' --max-tokens 2 "
                     "--ignore-eos --json");
    ASSERT_EQ(g.exit_code, 0) << g.out;
    auto run = json_lines(g.out).at(0);
    EXPECT_EQ(run["segments_from_store"], 3) << run;
    EXPECT_EQ(run["segments_missed"], 0) << run;
    EXPECT_EQ(run["store"]["tiers"][0]["hits"], 3) << run;
    // Bad input: no store, or a corpus line that is not a document.
    EXPECT_EQ(run_cli("precompute " + model_arg() + corpus).exit_code, 2);
    std::ofstream(dir / "bad.jsonl") << "{\"title\": \"no text\"}\n";
    EXPECT_EQ(
        run_cli("precompute " + model_arg() + " " + store + " --corpus " + (dir / "bad.jsonl").string()).exit_code, 2);
    fs::remove_all(dir);
}

// `bench store`: every source measured, and each one's documents came from where it says.
TEST(Cli, PeerCommandLinesStartOrSayWhyNot) {
    const std::string model = model_arg().substr(std::string("--model ").size());
    const std::string jinja = ::testing::TempDir() + "lazyattn_cli_template.jinja";
    std::ofstream(jinja) << "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}<|assistant|>";
    struct Line {
        std::string args;
        std::vector<std::string> warned;  // flags named by a warning line
    };
    const std::vector<Line> starts = {
        {"-m " + model + " -ngl 99 -c 512 --host 127.0.0.1", {"--n-gpu-layers 99"}},
        {"-m " + model + " -c 512 -np 4 -fa on --jinja", {"--flash-attn on", "--jinja"}},
        {"-m " + model + " --ctx-size 256 --n-gpu-layers 35 --cont-batching --mlock --no-mmap -t 2",
         {"--n-gpu-layers 35", "--cont-batching", "--mlock", "--no-mmap"}},
        {"-m " + model + " -fa -ngl 99 --chat-template-file " + jinja + " -b 256 -ub 256 --alias smol",
         {"--flash-attn on", "--ubatch-size 256"}},
        {"-m " + model + " -ctk bf16 -ctv f16 --metrics --threads-http 4 -to 60 --slots", {}},
        {model + " --gpu-memory-utilization 0.9 --max-model-len 512", {"--gpu-memory-utilization 0.9"}},
        {model + " --dtype auto --enable-prefix-caching --served-model-name smol --max-num-seqs 8",
         {"--dtype auto", "--enable-prefix-caching"}},
        {model + " --tensor-parallel-size 1 --kv-cache-dtype auto --trust-remote-code --max-num-batched-tokens 256",
         {"--tensor-parallel-size 1", "--trust-remote-code"}},
        {"--model " + model + " --api-key k --enforce-eager --seed 0 --disable-log-requests",
         {"--enforce-eager", "--disable-log-requests"}},
        // What llama.cpp's own server tests pass (tools/server/tests/utils.py).
        {"--model " + model + " --temp 0.8 --seed 42 --host 127.0.0.1,::1 --offline --no-slots --jinja --no-ui " +
             "--verbose --alias smol,tinyllama-2 --cors-origins '*' --swa-full --context-shift --cache-ram 0 " +
             "--no-cache-idle-slots --no-mmproj --reasoning-format none --no-models-autoload --backend_sampling",
         {"--offline", "--no-webui", "--cors-origins *", "--swa-full", "--context-shift", "--cache-ram 0",
          "--no-mmproj", "--no-models-autoload", "--backend-sampling"}},
        // Its embedding and reranker presets: started once by its harness before any test (their
        // routes answer 501 here).
        {"-m " + model + " --embeddings --pooling mean --reranking", {"--embeddings", "--pooling mean", "--rerank"}},
        // llama-server's built-in template names and a template's text (its tests pass both).
        {"-m " + model + " --chat-template command-r", {}},
        {"-m " + model + " --chat-template '{% for m in messages %}{{ m.content }}{% endfor %}'", {}},
        // A word that is neither a built-in name nor a file is a template's text, as llama-server takes it.
        {"-m " + model + " --chat-template command-r-plus", {}},
        // Tool calls are always served: vLLM's switches for them change nothing.
        {"-m " + model + " --enable-auto-tool-choice --tool-call-parser hermes",
         {"--enable-auto-tool-choice", "--tool-call-parser hermes"}},
    };
    for (const Line& line : starts) {
        const auto r = run_cli("serve " + line.args + " --port 0 --check", true);
        EXPECT_EQ(r.exit_code, 0) << line.args << "\n" << r.out;
        EXPECT_NE(r.out.find("start-up ok"), std::string::npos) << line.args << "\n" << r.out;
        for (const std::string& flag : line.warned) {
            EXPECT_NE(r.out.find("warning " + flag + " ("), std::string::npos) << flag << "\n" << r.out;
        }
    }
    // Refused before anything loads, naming the way here.
    const std::vector<std::pair<std::string, std::string>> refused = {
        {model + " --tensor-parallel-size 2", "one `lazyattn serve` per GPU"},
        {"-hf bartowski/SmolLM2-135M-Instruct-GGUF", "-m FILE"},
        {"-m " + model + " --chat-template missing/command-r-plus.jinja", "no such file"},
        {"-m " + model + " --mmproj-url http://x/mmproj.gguf", "not served"},
        {"-m " + model + " --spec-type ngram-simple", "speculative decoding"},
    };
    for (const auto& [args, reason] : refused) {
        const auto r = run_cli("serve " + args + " --port 0 --check", true);
        EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
        EXPECT_NE(r.out.find(reason), std::string::npos) << args << "\n" << r.out;
    }
    // vLLM's switch-off of prefix caching is lazyattn's --cache-mode none; -b is --max-batch-tokens.
    const auto none = run_cli("serve " + model + " --no-enable-prefix-caching --port 0 --check", true);
    EXPECT_NE(none.out.find("cache mode none"), std::string::npos) << none.out;
    EXPECT_EQ(run_cli("serve -m " + model + " -b 0 --port 0 --check").exit_code, 2);
    // The engine flags reach every computing command, not only serve.
    const auto gen = run_cli("generate -m " + model + " --prompt hi --max-tokens 1 -ngl 99 --mlock", true);
    EXPECT_EQ(gen.exit_code, 0) << gen.out;
    EXPECT_NE(gen.out.find("--n-gpu-layers 99 (llama-server) ignored"), std::string::npos) << gen.out;
}

// docs/api.md tables every compatibility flag serve's help lists.
TEST(Cli, EveryCompatibilityFlagIsDocumented) {
    std::ifstream in(LAZYATTN_SOURCE_DIR "/docs/api.md");
    const std::string api((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string help = run_cli("serve --help").out;
    const size_t group = help.find("Compatibility");
    ASSERT_NE(group, std::string::npos) << help;
    std::istringstream lines(help.substr(group));
    std::string line;
    int num_flags = 0;
    while (std::getline(lines, line)) {
        if (line.rfind("  -", 0) != 0) continue;
        const std::string names = line.substr(2, line.find(' ', 2) - 2);
        for (size_t start = 0; start < names.size();) {
            const size_t comma = std::min(names.find(',', start), names.size());
            const std::string name = names.substr(start, comma - start);
            EXPECT_NE(api.find("`" + name), std::string::npos) << name << " is not in docs/api.md";
            start = comma + 1;
            ++num_flags;
        }
    }
    EXPECT_GT(num_flags, 40);
}

TEST(Cli, MistypedNamesGetDidYouMean) {
    const auto flag = run_cli("serve --modelx foo.gguf", true);
    EXPECT_EQ(flag.exit_code, 2);
    EXPECT_NE(flag.out.find("did you mean --model"), std::string::npos) << flag.out;
    const auto nested = run_cli("bench rag --requsts 3", true);
    EXPECT_NE(nested.out.find("did you mean --requests"), std::string::npos) << nested.out;
    const auto command = run_cli("serv", true);
    EXPECT_NE(command.out.find("did you mean serve"), std::string::npos) << command.out;
    EXPECT_EQ(run_cli("serve --zzzzzzzz", true).out.find("did you mean"), std::string::npos);
}

TEST(Cli, VersionNamesCommitBuildIsaAndCuda) {
    const auto r = run_cli("--version");
    EXPECT_EQ(r.exit_code, 0);
    for (const char* line : {"lazyattn ", "git commit: ", "build type: ", "CPU ISA: ", "CUDA: "}) {
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
    }
    EXPECT_EQ(r.out.find("git commit: unknown"), std::string::npos) << r.out;  // built from this checkout
    // The ISA follows the limit the kernels obey.
    const auto scalar = run_shell("LAZYATTN_CPU_ISA=scalar " + std::string(LAZYATTN_CLI_PATH) + " --version");
    EXPECT_NE(scalar.out.find("CPU ISA: scalar"), std::string::npos) << scalar.out;
}

// Every option's default shows as "(default: X)"; none of CLI11's validator or flag artefacts.
TEST(Cli, HelpShowsDefaultsWithoutParserArtefacts) {
    const std::map<std::string, std::vector<std::string>> expected = {
        {"serve", {"(default: 8080)", "(default: 127.0.0.1)", "(default: 512)", "(default: 64)"}},
        {"generate", {"(default: 128)", "(default: 1)"}},
        {"bench rag", {"(default: 100)", "(default: 2.1)"}},
        {"bench quality", {"(default: 486)", "in addition", "--no-wiki"}},
        {"demo", {"(default: data/2wiki_sample.jsonl)", "(default: 3)"}},
    };
    for (const std::string cmd : {"serve", "generate", "info", "tokenize", "demo", "bench speed", "bench rag",
                                  "bench store", "bench quality", "precompute"}) {
        const auto r = run_cli(cmd + " --help");
        EXPECT_EQ(r.exit_code, 0) << cmd;
        for (const char* artefact : {":{", "{false}", "{true}", "INT:", "FLOAT:", "TEXT:", "=250"}) {
            EXPECT_EQ(r.out.find(artefact), std::string::npos) << cmd << ": " << artefact << "\n" << r.out;
        }
        if (expected.count(cmd) == 0) continue;
        for (const std::string& want : expected.at(cmd)) {
            EXPECT_NE(r.out.find(want), std::string::npos) << cmd << ": " << want << "\n" << r.out;
        }
    }
}

// The default data file is found from any working directory; a missing one names --data.
TEST(Cli, DataFilesAreFoundFromAnyDirectoryAndMissingOnesNameTheFlag) {
    const std::string scratch = ::testing::TempDir() + "lazyattn_cli_scratch";
    std::filesystem::create_directories(scratch);
    const std::string cd = "cd " + scratch + " && ";
    // synthetic:tiny: a context long enough for the sample's passages.
    const std::string cmd =
        cd + LAZYATTN_CLI_PATH + " demo --model synthetic:tiny --questions 1 --runs 1 --modes none --threads 2 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    EXPECT_EQ(WEXITSTATUS(pclose(p)), 0) << out;
    for (const std::string sub : {"demo", "bench quality", "bench rag", "bench store"}) {
        const auto r = run_cli(sub + " --data no_such_file.jsonl", true);
        EXPECT_EQ(r.exit_code, 2) << sub << ": " << r.out;
        EXPECT_NE(r.out.find("pass --data FILE"), std::string::npos) << sub << ": " << r.out;
    }
}

// `generate --kv-store redis://...` connects to Redis twice in all: the engine's read connection
// (opened at start-up by the one lookup that checks the tier) and the writer's. Before, the
// command checked the tier with a connection of its own first (three).
TEST(Cli, GenerateConnectsARedisTierOnce) {
    store::testing::RedisServer server;
    ASSERT_TRUE(server.running()) << "redis-server did not start (scripts/install_deps.sh installs it)";
    const auto received = [&] {
        const std::string info =
            store::testing::command_output("redis-cli -p " + std::to_string(server.port()) + " INFO stats");
        const size_t at = info.find("total_connections_received:");
        return at == std::string::npos ? -1 : std::atoll(info.c_str() + at + 27);
    };
    const long long before = received();
    ASSERT_GE(before, 1);
    const auto g = run_cli("generate " + model_arg() + " --kv-store " + server.url() +
                           " --doc-text 'a stitch in time saves nine' --prompt 'what?' --max-tokens 2 --ignore-eos");
    ASSERT_EQ(g.exit_code, 0) << g.out;
    // Less this question's own connection: the reads' and the writes'.
    EXPECT_EQ(received() - 1 - before, 2) << g.out;
}

// A Redis that is not running is reported when the engine opens its tiers (once, before any
// work), naming the URL; precompute stops, or with --unreachable-tier skip fills the tiers that
// answer; bench store refuses to measure it.
TEST(Cli, AnUnreachableStoreTierIsReportedAtOnce) {
    const std::string corpus = ::testing::TempDir() + "lazyattn_cli_probe_corpus.jsonl";
    std::ofstream(corpus) << "{\"title\": \"a\", \"text\": \"the cat sat on the mat\"}\n";
    const std::string down = " --kv-store redis://127.0.0.1:1 --kv-store-timeout-ms 500";
    const auto stop = run_cli("precompute " + model_arg() + " --corpus " + corpus + down, true);
    EXPECT_EQ(stop.exit_code, 1) << stop.out;
    EXPECT_NE(stop.out.find("redis://127.0.0.1:1 cannot be reached"), std::string::npos) << stop.out;
    EXPECT_NE(stop.out.find("--unreachable-tier skip"), std::string::npos) << stop.out;
    EXPECT_EQ(stop.out.find("documents computed"), std::string::npos) << "reported after computing:\n" << stop.out;
    const std::string dir = ::testing::TempDir() + "lazyattn_cli_probe_store";
    std::filesystem::remove_all(dir);
    const auto skip = run_cli(
        "precompute " + model_arg() + " --corpus " + corpus + down + " --kv-store " + dir + " --unreachable-tier skip",
        true);
    EXPECT_EQ(skip.exit_code, 0) << skip.out;
    EXPECT_NE(skip.out.find("skipped"), std::string::npos) << skip.out;
    EXPECT_FALSE(std::filesystem::is_empty(dir));
    const auto bench = run_cli("bench store " + model_arg() + down, true);
    EXPECT_EQ(bench.exit_code, 1) << bench.out;
    EXPECT_NE(bench.out.find("is Redis running?"), std::string::npos) << bench.out;
}

// bench rag --rate: the stream arrives open loop (Poisson) instead of from --clients, and each
// run is reported in --windows equal spans of time: every measured request in one span, the
// spans' conditioned-copy lookups adding up to the run's (none for plain lazy), with TTFT and
// completions per span, and balanced's last span against lazy's.
}  // namespace
}  // namespace lazyattn
