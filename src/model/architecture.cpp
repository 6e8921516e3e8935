// The table below follows llama.cpp's per-architecture graphs and its converter
// (convert_hf_to_gguf.py), read for behaviour:
// - llama: interleaved RoPE (ggml ROPE_TYPE_NORM). Llama 2/3.x, TinyLlama, Mistral 7B are all
//   "llama"; Llama 3.1+'s frequency scaling arrives as the rope_freqs tensor.
// - qwen2: NeoX RoPE, q/k/v biases (detected from the tensors).
// - qwen3: NeoX RoPE, no biases, RMSNorm over each head of q and of k before RoPE; head size from
//   attention.key_length (q width = heads * head size may differ from hidden).
// - gemma3: NeoX RoPE, embedding times sqrt(hidden), q/k norms, post-attention and post-FFN norms,
//   GeGLU (tanh GELU), sliding-window local layers. Norm weights are stored with Gemma's "1 +"
//   already added by the converter, so they are used as plain RMSNorm weights.
// - phi3: NeoX RoPE, one fused attn_qkv matrix, ffn_up holding gate then up, LongRoPE factors.
#include "model/architecture.h"

namespace lazyattn::model {
namespace {

constexpr ArchTraits kArchitectures[] = {
    // name, arch, pairing, activation, qk_norm, post_norms, scale_embedding, fused_gate_up, swa
    {"llama", Architecture::kLlama, RopePairing::kInterleaved, FfnActivation::kSilu, false, false, false, false, false},
    {"qwen2", Architecture::kQwen2, RopePairing::kNeox, FfnActivation::kSilu, false, false, false, false, false},
    {"qwen3", Architecture::kQwen3, RopePairing::kNeox, FfnActivation::kSilu, true, false, false, false, false},
    {"gemma3", Architecture::kGemma3, RopePairing::kNeox, FfnActivation::kGeluTanh, true, true, true, false, true},
    {"phi3", Architecture::kPhi3, RopePairing::kNeox, FfnActivation::kSilu, false, false, false, true, false},
};

}  // namespace

std::string supported_architectures() {
    std::string list;
    for (const ArchTraits& a : kArchitectures) list += std::string(list.empty() ? "" : ", ") + a.name;
    return list;
}

Expected<const ArchTraits*> find_architecture(const std::string& name) {
    for (const ArchTraits& a : kArchitectures) {
        if (name == a.name) return &a;
    }
    return unsupported("architecture '" + name + "' is not supported (supported: " + supported_architectures() + ")");
}

const ArchTraits& traits_of(Architecture arch) {
    for (const ArchTraits& a : kArchitectures) {
        if (a.arch == arch) return a;
    }
    return kArchitectures[0];
}

}  // namespace lazyattn::model
