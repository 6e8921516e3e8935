// Model: a decoder-only transformer of the Llama family (llama, qwen2) run one ForwardBatch at a
// time on a Backend, reading and writing a paged KV cache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "kv/kv_storage.h"
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
    const kernels::RopeParams& rope() const { return rope_; }

    // Runs one step: writes every row's K/V into `kv` at its slot, attends as the plan says and
    // returns logits for batch.logit_rows in `logits` ([logit_rows.size(), vocab]).
    Status forward(const ForwardBatch& batch, kv::KvStorage& kv, std::vector<float>* logits);

private:
    Model() = default;
    void init_rope();
    // Lets the backend lay the quantized matrices out its own way (e.g. repacked rows).
    void prepare_weights();
    void run_layer(int32_t layer, const ForwardBatch& batch, kv::KvStorage& kv, int32_t n);

    std::unique_ptr<loader::GgufFile> file_;
    ModelConfig config_;
    ModelWeights weights_;
    backend::Backend* backend_ = nullptr;
    std::vector<float> inv_freq_;       // [rotary_dims / 2]
    std::vector<float> cos_sin_table_;  // [context_length, rotary_dims / 2, 2]
    kernels::RopeParams rope_{};
    // Activations, resized per step: x/residual [n, hidden], q/attn [n, q_dim], k/v [n, kv_dim],
    // gate/up [n, ffn]; gathered/normed [logit rows, hidden].
    std::vector<float> x_, h_, q_, k_, v_, attn_, gate_, up_, gathered_, normed_;
};

}  // namespace lazyattn::model
