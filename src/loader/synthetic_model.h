// Synthetic GGUF models: a complete llama/qwen2 file (metadata, tokenizer, weights) of any small
// size, with deterministic random weights, so the loader, tokenizer, model and engine can be
// tested end to end in milliseconds. Same options and seed give byte-identical files.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "loader/ggml_type.h"

namespace lazyattn::loader {

struct SyntheticModelOptions {
    std::string arch = "llama";  // "llama" (interleaved RoPE) or "qwen2" (neox, qkv bias)
    int32_t num_layers = 2;
    int32_t hidden = 64;
    int32_t num_heads = 4;
    int32_t num_kv_heads = 2;
    int32_t ffn = 128;
    int32_t context_length = 512;
    uint64_t seed = 1234;
    // Type of the 2-D weight matrices (token_embd included): F32, F16, BF16, Q8_0, Q4_0, Q4_1,
    // Q5_0, Q5_1, Q2_K..Q6_K. Norms and biases are always F32. Quantized types need hidden and
    // ffn to be multiples of their block (32; 256 for the K-quants).
    GgmlType weight_type = GgmlType::kF32;
    bool tied_embeddings = true;  // false: also write output.weight
    float rope_freq_base = 10000.0f;

    Status validate() const;
};

// Writes the model to `path` (atomically). kInvalidArgument for inconsistent options.
Status write_synthetic_model(const std::string& path, const SyntheticModelOptions& options);

}  // namespace lazyattn::loader
