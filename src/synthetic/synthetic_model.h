// Synthetic GGUF models: a complete llama/qwen2/qwen3/gemma3/phi3 file (metadata, tokenizer,
// weights, laid out and named as llama.cpp's converter writes them) of any small size, with deterministic random weights, so the loader, tokenizer, model and engine can be
// tested end to end in milliseconds. Same options and seed give byte-identical files.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "loader/ggml_type.h"

namespace lazyattn::synthetic {

struct SyntheticModelOptions {
    // "llama" (interleaved RoPE), "qwen2" (neox, qkv bias), "qwen3" (q/k head norms), "gemma3"
    // (q/k norms, post norms, GeGLU, sliding windows), "phi3" (fused qkv and gate/up).
    std::string arch = "llama";
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
    loader::GgmlType weight_type = loader::GgmlType::kF32;
    bool tied_embeddings = true;  // false: also write output.weight
    float rope_freq_base = 10000.0f;
    int32_t head_dim = 0;  // attention.key_length; 0: hidden / heads (not written)
    // gemma3: attention.sliding_window (0: not written, every layer global) and the pattern (every
    // pattern-th layer global).
    int32_t sliding_window = 0;
    int32_t sliding_window_pattern = 6;
    // llama: a rope_freqs tensor of Llama-3.1-style factors (rope_type "llama3", factor 8).
    bool llama3_rope_freqs = false;
    // phi3: rope_factors_long/short tensors, rope.scaling.attn_factor, and an original context of
    // context_length / 4 (so the long factors are the ones in use).
    bool phi3_rope_factors = false;
    float final_logit_softcap = 0.0f;  // written when > 0
    std::string omit_tensor;           // a tensor left out (tests of the loader's refusal)

    int32_t rope_dims = 0;  // rope.dimension_count; 0: the head size (partial rotary below it)

    int32_t effective_head_dim() const { return head_dim > 0 ? head_dim : hidden / num_heads; }
    int32_t effective_rope_dims() const { return rope_dims > 0 ? rope_dims : effective_head_dim(); }

    Status validate() const;
};

// Writes the model to `path` (atomically). kInvalidArgument for inconsistent options.
Status write_synthetic_model(const std::string& path, const SyntheticModelOptions& options);

// ggml's llama_ftype number (general.file_type) for a file whose matrices are all `t` (the K
// types as their _M mixes); 0 (all F32) for a type without one.
uint32_t gguf_file_type(loader::GgmlType t);

}  // namespace lazyattn::synthetic
