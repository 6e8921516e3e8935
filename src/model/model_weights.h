// Model weights in compute form (fp32, dequantized once at load), named as in GGUF
// (blk.N.attn_q.weight, ...). Quantized weight storage comes with the quantized matmul kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "kernels/params/matmul_params.h"
#include "model/model_config.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::model {

struct Linear {
    std::vector<float> w;     // [out_dim, in_dim]
    std::vector<float> bias;  // [out_dim] or empty
    int64_t in_dim = 0;
    int64_t out_dim = 0;

    kernels::MatmulParams params(const float* x, float* y, int64_t num_rows) const {
        return {x, w.data(), bias.empty() ? nullptr : bias.data(), y, num_rows, in_dim, out_dim};
    }
};

struct LayerWeights {
    std::vector<float> attn_norm;  // [hidden]
    std::vector<float> ffn_norm;   // [hidden]
    Linear wq, wk, wv, wo;
    Linear w_gate, w_up, w_down;
};

struct ModelWeights {
    std::vector<float> token_embd;  // [vocab, hidden]; the LM head too when embeddings are tied
    std::vector<LayerWeights> layers;
    std::vector<float> output_norm; // [hidden]
    Linear lm_head;                 // empty when tied (token_embd is used)

    const float* lm_head_weights() const { return lm_head.w.empty() ? token_embd.data() : lm_head.w.data(); }
};

// Reads and dequantizes every tensor the config needs, checking each tensor's shape.
Expected<ModelWeights> load_weights(const loader::GgufFile& file, const ModelConfig& config);

}  // namespace lazyattn::model
