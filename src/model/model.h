// Model: a decoder-only transformer of the Llama family (llama, qwen2, qwen3, gemma3, phi3; see
// architecture.h) run one ForwardBatch at a time on a Backend, reading and writing a paged KV
// cache. One layer loop serves every architecture: the steps an architecture adds (q/k head
// norms, post norms, GeGLU, embedding scale, sliding windows) are switched by its config.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "core/status.h"
#include "loader/gguf_file.h"
#include "model/forward_batch.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace lazyattn::model {

class Model {
public:
    // Opens a GGUF file, reads its config and weights. The backend must outlive the model.
    static Expected<std::unique_ptr<Model>> load(const std::string& path, backend::Backend* backend,
                                                 const WeightOptions& options = {});

    const ModelConfig& config() const { return config_; }
    const loader::GgufFile& gguf() const { return *file_; }
    backend::Backend& backend() { return *backend_; }
    // The RoPE of layer `layer` (Gemma 3's sliding-window layers have their own base): what its
    // queries and keys are rotated with.
    const kernels::RopeParams& rope(int32_t layer) const {
        return config_.is_sliding(layer) ? rope_local_.params : rope_global_.params;
    }
    // The same rotation without the magnitude (mscale 1): block-attn's re-rotation of stored keys
    // by a delta, which must turn them, not scale them again.
    const kernels::RopeParams& rerotation_rope(int32_t layer) const {
        return config_.is_sliding(layer) ? rope_local_.rerotation : rope_global_.rerotation;
    }

    // Runs one step on the backend: makes the plan's block copies, writes every row's K/V into
    // `kv` (the backend's pool) at its slot, attends as the plan says and returns logits for
    // batch.logit_rows in `logits` ([logit_rows.size(), vocab]). A plan of copies only returns
    // no logits.
    Status forward(const ForwardBatch& batch, backend::KvMemory& kv, std::vector<float>* logits);

private:
    Model() = default;
    // Frequencies and a (cos, sin) table for one RopeConfig, and the kernel params pointing at them.
    struct RopeTables {
        std::vector<float> inv_freq;       // [rotary_dims / 2]
        std::vector<float> cos_sin_table;  // [context_length, rotary_dims / 2, 2]
        kernels::RopeParams params{};
        kernels::RopeParams rerotation{};  // params with mscale 1 and no table (angles direct)
    };
    static void init_rope(const RopeConfig& rc, int32_t num_positions, RopeTables* out);
    // Lets the backend lay the quantized matrices out its own way (e.g. repacked rows).
    void prepare_weights();
    void run_layer(int32_t layer, const ForwardBatch& batch, backend::KvMemory& kv, int32_t n);
    void run_attention(int32_t layer, const ForwardBatch& batch, backend::KvMemory& kv, int32_t n);
    void run_kv_copies(int32_t layer, const ForwardBatch& batch, backend::KvMemory& kv);
    void run_ffn(int32_t layer, int32_t n);

    std::unique_ptr<loader::GgufFile> file_;
    ModelConfig config_;
    ModelWeights weights_;
    backend::Backend* backend_ = nullptr;
    RopeTables rope_global_, rope_local_;  // local: sliding-window layers only
    // Activations, resized per step: x/residual [n, hidden], q/attn [n, q_dim], k/v [n, kv_dim],
    // gate/up [n, ffn]; gathered/normed [logit rows, hidden].
    std::vector<float> x_, h_, q_, k_, v_, attn_, gate_, up_, gathered_, normed_;
};

}  // namespace lazyattn::model
