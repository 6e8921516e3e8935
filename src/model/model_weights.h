// Model weights in compute form, named as in GGUF (blk.N.attn_q.weight, ...). Matrices of every
// supported type (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K) are read in place
// from the mapped file, never widened at load; other types (IQ*, TQ*, MXFP4, ...) are refused
// with the tensor's name. Norms and biases (small 1-D tensors) are converted to fp32.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "kernels/params/matmul_params.h"
#include "model/model_config.h"

namespace lazyattn::loader {
class GgufFile;
}  // namespace lazyattn::loader

namespace lazyattn::model {

struct Linear {
    std::vector<float> w_f32;       // [out_dim, in_dim] fp32 copy (only with dequantize_all)
    const void* w_quant = nullptr;  // the rows inside the mapped file (any type), else null
    kernels::GgmlType type = kernels::GgmlType::kF32;
    std::shared_ptr<const void> prepared;  // the backend's layout of w_quant (Backend::prepare_weight)
    std::vector<float> bias;               // [out_dim] or empty
    const float* bias_resident = nullptr;  // the backend's copy of bias (Model::resident), if made
    int64_t in_dim = 0;
    int64_t out_dim = 0;

    const void* data() const { return w_quant != nullptr ? w_quant : static_cast<const void*>(w_f32.data()); }
    kernels::MatmulParams params(const float* x, float* y, int64_t num_rows) const {
        const float* b = bias.empty() ? nullptr : bias_resident != nullptr ? bias_resident : bias.data();
        return {x, data(), type, b, y, num_rows, in_dim, out_dim, prepared.get()};
    }
};

struct WeightOptions {
    bool dequantize_all = false;  // fp32 everywhere (slower; for comparisons)
};

struct LayerWeights {
    std::vector<float> attn_norm;  // [hidden]
    std::vector<float> ffn_norm;   // [hidden]
    // Gemma 3's norms of each block's output (empty for other architectures): [hidden].
    std::vector<float> attn_post_norm, ffn_post_norm;
    // Qwen3 / Gemma 3's RMSNorm weights over each head of q and of k: [head_dim], else empty.
    std::vector<float> q_norm, k_norm;
    // [q_dim | kv_dim | kv_dim, hidden]. A fused attn_qkv (Phi-3) is read as three row ranges of
    // the one matrix, and a fused ffn_up as gate and up, so the layer loop sees one shape.
    Linear wq, wk, wv, wo;
    Linear w_gate, w_up, w_down;
};

struct ModelWeights {
    Linear token_embd;  // [vocab, hidden]; the LM head too when embeddings are tied
    std::vector<LayerWeights> layers;
    std::vector<float> output_norm;  // [hidden]
    Linear lm_head;                  // unused (out_dim 0) when tied

    const Linear& output() const { return lm_head.out_dim > 0 ? lm_head : token_embd; }
};

// True for the GGUF types whose matrices are computed on in place.
bool weight_type_in_place(kernels::GgmlType t);

// Reads every tensor the config needs, checking each tensor's shape. The file must outlive the
// weights (quantized matrices point into it).
Expected<ModelWeights> load_weights(const loader::GgufFile& file, const ModelConfig& config,
                                    const WeightOptions& options = {});

}  // namespace lazyattn::model
