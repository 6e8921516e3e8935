// la_make_synthetic_model: writes a small synthetic llama/qwen2/qwen3/gemma3/phi3 GGUF model (random weights, a
// real-format byte-level BPE vocabulary, SmolLM2's chat template), then reopens it and prints
// its configuration, so the file is known to load before anything else uses it.
//
//   la_make_synthetic_model out.gguf --arch qwen2 --layers 2 --hidden 64 --type q8_0
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>

#include "loader/gguf_file.h"
#include "model/model_config.h"
#include "synthetic/synthetic_model.h"

namespace la = lazyattn;

int main(int argc, char** argv) {
    la::synthetic::SyntheticModelOptions o;
    std::string path;
    std::string type = "f32";
    bool untied = false;

    CLI::App app{"Write a synthetic GGUF model for tests"};
    app.add_option("output", path, "path of the .gguf file to write")->required();
    app.add_option("--arch", o.arch, "llama, qwen2, qwen3, gemma3 or phi3")->capture_default_str();
    app.add_option("--head-dim", o.head_dim, "attention.key_length (0: hidden / heads)")->capture_default_str();
    app.add_option("--sliding-window", o.sliding_window, "gemma3: window size (0: none)")->capture_default_str();
    app.add_option("--sliding-window-pattern", o.sliding_window_pattern, "gemma3: every N-th layer global")
        ->capture_default_str();
    app.add_flag("--llama3-rope-freqs", o.llama3_rope_freqs, "llama: write Llama-3.1-style rope_freqs");
    app.add_flag("--phi3-rope-factors", o.phi3_rope_factors, "phi3: write LongRoPE factors and attn_factor");
    app.add_option("--softcap", o.final_logit_softcap, "final logit soft-cap (0: none)")->capture_default_str();
    app.add_option("--rope-dims", o.rope_dims, "rotary dims (0: the head size)")->capture_default_str();
    app.add_option("--layers", o.num_layers, "number of layers")->capture_default_str();
    app.add_option("--hidden", o.hidden, "embedding length")->capture_default_str();
    app.add_option("--heads", o.num_heads, "query heads")->capture_default_str();
    app.add_option("--kv-heads", o.num_kv_heads, "key/value heads")->capture_default_str();
    app.add_option("--ffn", o.ffn, "feed-forward length")->capture_default_str();
    app.add_option("--ctx", o.context_length, "context length")->capture_default_str();
    app.add_option("--seed", o.seed, "weight seed")->capture_default_str();
    app.add_option("--rope-base", o.rope_freq_base, "RoPE frequency base")->capture_default_str();
    app.add_option("--type", type, "matrix type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k")
        ->capture_default_str();
    app.add_flag("--untied", untied, "write a separate output.weight");
    CLI11_PARSE(app, argc, argv);

    const std::map<std::string, la::loader::GgmlType> types = {
        {"f32", la::loader::GgmlType::kF32},   {"f16", la::loader::GgmlType::kF16},
        {"bf16", la::loader::GgmlType::kBF16}, {"q8_0", la::loader::GgmlType::kQ8_0},
        {"q4_0", la::loader::GgmlType::kQ4_0}, {"q4_1", la::loader::GgmlType::kQ4_1},
        {"q5_0", la::loader::GgmlType::kQ5_0}, {"q5_1", la::loader::GgmlType::kQ5_1},
        {"q2_k", la::loader::GgmlType::kQ2_K}, {"q3_k", la::loader::GgmlType::kQ3_K},
        {"q4_k", la::loader::GgmlType::kQ4_K}, {"q5_k", la::loader::GgmlType::kQ5_K},
        {"q6_k", la::loader::GgmlType::kQ6_K},
    };
    const auto it = types.find(type);
    if (it == types.end()) {
        std::fprintf(stderr, "unknown --type '%s'\n", type.c_str());
        return 2;
    }
    o.weight_type = it->second;
    o.tied_embeddings = !untied;

    const la::Status written = la::synthetic::write_synthetic_model(path, o);
    if (!written.ok()) {
        std::fprintf(stderr, "error: %s\n", written.to_string().c_str());
        return 1;
    }
    auto file = la::loader::GgufFile::open(path);
    if (!file.ok()) {
        std::fprintf(stderr, "error: reopening: %s\n", file.status().to_string().c_str());
        return 1;
    }
    auto config = la::model::ModelConfig::from_gguf(**file);
    if (!config.ok()) {
        std::fprintf(stderr, "error: config: %s\n", config.status().to_string().c_str());
        return 1;
    }
    std::printf("wrote %s: %zu tensors, %zu metadata keys\n%s", path.c_str(), (*file)->tensors().size(),
                (*file)->metadata().size(), config->describe().c_str());
    return 0;
}
