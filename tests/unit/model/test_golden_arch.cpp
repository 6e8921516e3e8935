// lazyattn against llama.cpp on every architecture, from tests/data/golden_arch.json
// (scripts/make_golden_arch.py: llama-server's greedy continuations and top log-probabilities on
// the synthetic models below). The model file is rewritten here from the same options and its
// hash checked against the golden's, so both engines read the same bytes. Weights and both KV
// caches are fp32 and llama.cpp runs without flash attention, so the engines differ only in
// summation order and ggml's fp16-table GELU: log-probabilities agree to ~1e-6 (Gemma 3, through
// that GELU: ~1e-3; the bar is 5e-3), and greedy choices agree wherever llama.cpp's top-1 is not
// a near-tie. The golden's prompts (30 tokens) run past Gemma's 8-token window.
#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"
#include "synthetic_model_fixture.h"

namespace lazyattn {
namespace {

// The options scripts/make_golden_arch.py passes to la_make_synthetic_model (ARCHITECTURES and
// COMMON there).
synthetic::SyntheticModelOptions options_of(const std::string& name) {
    synthetic::SyntheticModelOptions o;
    o.num_layers = 3;
    o.hidden = 64;
    o.num_heads = 4;
    o.num_kv_heads = 2;
    o.ffn = 128;
    o.context_length = 512;
    o.seed = 77;
    o.arch = name == "llama3" ? "llama" : name == "phi3-partial" ? "phi3" : name;
    if (name == "llama3") {
        o.llama3_rope_freqs = true;
        o.rope_freq_base = 500000.0f;
    }
    if (name == "qwen3" || name == "gemma3") o.head_dim = 32;
    if (name == "gemma3") {
        o.sliding_window = 8;
        o.sliding_window_pattern = 2;
        o.rope_freq_base = 1000000.0f;
    }
    if (name == "phi3" || name == "phi3-partial") {
        o.phi3_rope_factors = true;
        o.tied_embeddings = name == "phi3-partial";
    }
    if (name == "phi3-partial") o.rope_dims = 12;  // as Phi-4-mini: 3/4 of each head rotates
    return o;
}

std::string fnv1a64_of_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    uint64_t h = 0xcbf29ce484222325ull;
    char c;
    while (in.get(c)) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

nlohmann::json golden() {
    std::ifstream in(std::string(LAZYATTN_TEST_DATA_DIR) + "/golden_arch.json");
    EXPECT_TRUE(in.good()) << "missing tests/data/golden_arch.json (scripts/make_golden_arch.py)";
    return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

// log-softmax of one row of logits.
std::vector<double> log_probs(const float* logits, int32_t vocab) {
    double max = logits[0], sum = 0;
    for (int32_t i = 1; i < vocab; ++i) max = std::max(max, double(logits[i]));
    for (int32_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max);
    std::vector<double> out(vocab);
    for (int32_t i = 0; i < vocab; ++i) out[i] = double(logits[i]) - max - std::log(sum);
    return out;
}

TEST(GoldenArchLlamaCpp, LogProbsAndGreedyContinuationsMatchLlamaCpp) {
    const nlohmann::json g = golden();
    ASSERT_FALSE(g.is_null());
    ASSERT_GE(g["architectures"].size(), 7u);
    for (const auto& [name, arch] : g["architectures"].items()) {
        SCOPED_TRACE(name);
        const std::string path = testing::synthetic_model_path(options_of(name), "golden-arch-" + name);
        ASSERT_EQ(fnv1a64_of_file(path), arch["fnv1a64"].get<std::string>())
            << "the synthetic " << name
            << " model changed since the golden was made: rerun scripts/make_golden_arch.py";
        auto lm = engine::load_model(path, 2);
        ASSERT_TRUE(lm.ok()) << lm.status().to_string();
        engine::EngineConfig config;
        config.kv_types = kernels::same_kv_types(kernels::KvDtype::kF32);
        engine::SyncEngine eng(*lm->model, *lm->tokenizer, config);
        const int32_t vocab = lm->model->config().vocab_size;
        double worst = 0;
        for (const auto& prompt : arch["prompts"]) {
            const auto ids = prompt["ids"].get<std::vector<int32_t>>();
            std::vector<int32_t> theirs;
            for (const auto& step : prompt["steps"]) theirs.push_back(step["id"].get<int32_t>());
            // Our distribution at every step of llama.cpp's continuation, from one prompt.
            engine::RagRequest req;
            req.tail = ids;
            req.tail.insert(req.tail.end(), theirs.begin(), theirs.end() - 1);
            auto logits = eng.tail_logits(req);
            ASSERT_TRUE(logits.ok()) << logits.status().to_string();
            for (size_t s = 0; s < theirs.size(); ++s) {
                const auto lp = log_probs(logits->data() + (ids.size() - 1 + s) * size_t(vocab), vocab);
                const auto& top = prompt["steps"][s]["top"];
                for (const auto& pair : top) {
                    const double diff = std::abs(lp[pair[0].get<int32_t>()] - pair[1].get<double>());
                    worst = std::max(worst, diff);
                    EXPECT_LT(diff, 5e-3) << "step " << s << " token " << pair[0];
                }
                // Teacher-forced: each step's argmax must be llama.cpp's unless that step is a near-tie.
                const double margin = top.size() > 1 ? top[0][1].get<double>() - top[1][1].get<double>() : 1.0;
                if (margin >= 1e-2) {
                    const int32_t ours = int32_t(std::max_element(lp.begin(), lp.end()) - lp.begin());
                    EXPECT_EQ(ours, theirs[s]) << "greedy step " << s << " (llama.cpp margin " << margin << ")";
                }
            }
            engine::RagRequest gen;
            gen.tail = ids;
            gen.max_tokens = int32_t(theirs.size());
            gen.ignore_eos = true;
            auto run = eng.run(gen);
            ASSERT_TRUE(run.ok()) << run.status().to_string();
            // Continuations agree up to llama.cpp's first near-tie (either engine may break it).
            for (size_t s = 0; s < theirs.size() && s < run->token_ids.size(); ++s) {
                const auto& top = prompt["steps"][s]["top"];
                if (top.size() > 1 && top[0][1].get<double>() - top[1][1].get<double>() < 1e-2) break;
                EXPECT_EQ(run->token_ids[s], theirs[s]) << "generated step " << s;
            }
        }
        std::printf("[golden arch] %s: worst |log p| difference to llama.cpp %.2e\n", name.c_str(), worst);
    }
}

}  // namespace
}  // namespace lazyattn
