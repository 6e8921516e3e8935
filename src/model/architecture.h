// The architectures lazyattn runs and what each one's layer does beyond the Llama recipe. GGUF
// metadata says the sizes; the facts here are those a file does not carry (llama.cpp hard-codes
// them per architecture too): RoPE pairing, which norms exist, the FFN activation, the embedding
// scale, fused matrices.
#pragma once

#include <string>

#include "core/status.h"

namespace lazyattn::model {

enum class Architecture { kLlama, kQwen2, kQwen3, kGemma3, kPhi3 };

// How RoPE pairs the dimensions of a head: (2i, 2i+1) as in the original Llama ("interleaved",
// ggml's NORM mode) or (i, i + d/2) as in GPT-NeoX / Qwen ("neox").
enum class RopePairing { kInterleaved, kNeox };

// The gated FFN's activation: silu(gate) * up (SwiGLU) or gelu_tanh(gate) * up (GeGLU, Gemma).
enum class FfnActivation { kSilu, kGeluTanh };

struct ArchTraits {
    const char* name;  // general.architecture
    Architecture arch;
    RopePairing pairing;
    FfnActivation activation;
    bool qk_norm;          // per-head RMSNorm of q and k before RoPE (attn_q_norm / attn_k_norm)
    bool post_norms;       // RMSNorm of each block's output before the residual add (Gemma)
    bool scale_embedding;  // token embedding times sqrt(hidden) (Gemma)
    bool fused_gate_up;    // ffn_up holds gate rows then up rows, no ffn_gate (Phi-3)
    bool sliding_window;   // reads <arch>.attention.sliding_window (Gemma 3's local layers)
};

// The traits of a supported architecture; kUnsupported naming it and the supported list.
Expected<const ArchTraits*> find_architecture(const std::string& name);
const ArchTraits& traits_of(Architecture arch);
// "llama, qwen2, ..." for messages and docs.
std::string supported_architectures();

}  // namespace lazyattn::model
