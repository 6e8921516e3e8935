// ModelConfig: the hyperparameters of a model, read once from GGUF metadata. Run-time settings
// (threads, pool size, cache mode) live elsewhere (EngineConfig).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::model {

enum class Architecture { kLlama, kQwen2 };

// How RoPE pairs the dimensions of a head: (2i, 2i+1) as in the original Llama ("interleaved",
// ggml's NORM mode) or (i, i + d/2) as in GPT-NeoX / Qwen2 ("neox").
enum class RopePairing { kInterleaved, kNeox };

struct RopeConfig {
    float freq_base = 10000.0f;
    int32_t num_rotary_dims = 0;  // usually head_dim
    RopePairing pairing = RopePairing::kInterleaved;
    // Llama-3 style per-frequency factors (GGUF tensor rope_freqs.weight): inv_freq[i] /= factors[i].
    // Empty when the model has none.
    std::vector<float> freq_factors;
    // Linear position scaling (rope.scaling.type == linear): position *= linear_scale.
    float linear_scale = 1.0f;
};

struct ModelConfig {
    Architecture arch = Architecture::kLlama;
    std::string arch_name;  // "llama", "qwen2"
    std::string name;       // general.name
    int32_t num_layers = 0;
    int32_t hidden_dim = 0;  // embedding_length
    int32_t ffn_dim = 0;     // feed_forward_length
    int32_t num_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;
    int32_t vocab_size = 0;
    int32_t context_length = 0;
    float norm_eps = 1e-5f;
    bool qkv_bias = false;         // qwen2
    bool tied_embeddings = false;  // no output.weight: the LM head reuses token_embd
    RopeConfig rope;

    // Reads and validates every field from GGUF metadata (and rope_freqs.weight when present).
    static Expected<ModelConfig> from_gguf(const loader::GgufFile& file);
    Status validate() const;
    // Multi-line human-readable description (used by `lazyattn info`).
    std::string describe() const;
};

}  // namespace lazyattn::model
