// ModelConfig: the hyperparameters of a model, read once from GGUF metadata. Run-time settings
// (threads, pool size, cache mode) live elsewhere (EngineConfig).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/architecture.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::model {

struct RopeConfig {
    float freq_base = 10000.0f;
    int32_t num_rotary_dims = 0;  // usually head_dim
    RopePairing pairing = RopePairing::kInterleaved;
    // Llama-3 style per-frequency factors (GGUF tensor rope_freqs.weight): inv_freq[i] /= factors[i].
    // Empty when the model has none.
    std::vector<float> freq_factors;
    // Linear position scaling (rope.scaling.type == linear): position *= linear_scale.
    float linear_scale = 1.0f;
    // rope.scaling.attn_factor (Phi-3 LongRoPE): ggml multiplies cos and sin by it, i.e. the
    // rotated dims of both q and k (kernels::RopeParams::mscale).
    float attn_factor = 1.0f;
};

struct ModelConfig {
    Architecture arch = Architecture::kLlama;
    std::string arch_name;  // general.architecture: "llama", "qwen2", "qwen3", "gemma3", "phi3"
    std::string name;       // general.name
    int32_t num_layers = 0;
    int32_t hidden_dim = 0;  // embedding_length
    int32_t ffn_dim = 0;     // feed_forward_length
    int32_t num_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;  // attention.key_length (hidden / heads when absent)
    int32_t vocab_size = 0;
    int32_t context_length = 0;
    float norm_eps = 1e-5f;
    bool qkv_bias = false;         // qwen2
    bool tied_embeddings = false;  // no output.weight: the LM head reuses token_embd
    bool fused_qkv = false;        // one attn_qkv matrix (rows: q, then k, then v), as in phi3
    RopeConfig rope;               // of the global (full-attention) layers
    // Sliding-window attention: layer l attends only keys less than sliding_window positions
    // behind the query when layer_sliding[l]; those layers rotate with rope_local. 0: none.
    int32_t sliding_window = 0;
    std::vector<uint8_t> layer_sliding;  // [num_layers], empty when sliding_window is 0
    RopeConfig rope_local;               // gemma3: base rope.freq_base_swa (10000), no scaling
    float attention_scale = 0.0f;        // scores = q.k * attention_scale (set by from_gguf)
    float embedding_scale = 1.0f;        // gemma3: sqrt(hidden)
    float final_logit_softcap = 0.0f;    // logits = cap * tanh(logits / cap); 0: none

    const ArchTraits& traits() const { return traits_of(arch); }
    int64_t q_dim() const { return int64_t(num_heads) * head_dim; }
    int64_t kv_dim() const { return int64_t(num_kv_heads) * head_dim; }
    bool is_sliding(int32_t layer) const { return sliding_window > 0 && layer_sliding[size_t(layer)] != 0; }
    const RopeConfig& rope_of(int32_t layer) const { return is_sliding(layer) ? rope_local : rope; }

    // Reads and validates every field from GGUF metadata (and the RoPE factor tensors: rope_freqs,
    // rope_factors_long / rope_factors_short, when present).
    static Expected<ModelConfig> from_gguf(const loader::GgufFile& file);
    Status validate() const;
    // Multi-line human-readable description (used by `lazyattn info`).
    std::string describe() const;
};

}  // namespace lazyattn::model
