// Model: a decoder-only transformer of the Llama family (llama, qwen2, qwen3, gemma3, phi3; see
// architecture.h) run one ForwardBatch at a time on a Backend, reading and writing a paged KV
// cache. One layer loop serves every architecture: the steps an architecture adds (q/k head
// norms, post norms, GeGLU, embedding scale, sliding windows) are switched by its config.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_array.h"
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
    const backend::Backend& backend() const { return *backend_; }
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
    // `sample_rows` (optional, one per logit row, only where samples_on_device() said yes for
    // them): the backend picks each row's token where the logits live and `tokens` receives one
    // id per logit row, `logits` left empty. Without them `tokens` stays empty and `logits`
    // holds the rows.
    // With batch.mass_seqs, *key_mass gets the attention mass of their keys summed over the
    // layers of batch.mass_layers (every layer when empty), in kernels::ref::attention_mass's
    // layout over those sequences (kInvalidArgument where the backend cannot measure it).
    // `before_sampling` (optional) runs once the step's work is issued, right before the rows
    // are sampled on the device: the caller finishes what the rows point to (the grammar
    // bitmasks its helper thread computed while the device ran the layers).
    Status forward(const ForwardBatch& batch, backend::KvMemory& kv, std::vector<float>* logits,
                   const std::vector<backend::SampleRow>* sample_rows = nullptr, std::vector<int32_t>* tokens = nullptr,
                   std::vector<float>* key_mass = nullptr, const std::function<void()>& before_sampling = {});
    // CacheBlend's measurement (engine::DocumentReuse @deviation): each row is a cached document
    // token placed in the request, with everything before it in view. Its layers before
    // kDeviationLayer run in full without storing anything, then *deviation[r] is the squared
    // distance of its keys and values in kDeviationLayer from the cached ones at
    // batch.slot_mapping[r] (Backend::kv_deviation; keys rotated at store_positions[r], the
    // cached copy's frame). Layer 0's keys need no context, so layer 1 is the first where the
    // context shows. kInvalidArgument where the backend cannot measure it.
    static constexpr int32_t kDeviationLayer = 1;
    Status measure_kv_deviation(const ForwardBatch& batch, backend::KvMemory& kv, std::vector<float>* deviation);
    // Whether forward() can sample `rows` on the device: the backend samples where its logits
    // live (and they do not live on the host), and no row with a temperature meets the final
    // soft-cap, which the host applies to downloaded logits (monotonic, so it never changes an
    // argmax, but it changes the probabilities a sampled row draws from).
    bool samples_on_device(const std::vector<backend::SampleRow>& rows) const;

private:
    Model() = default;
    // Frequencies and a (cos, sin) table for one RopeConfig, and the kernel params pointing at them
    // (at the backend's copies: see resident()).
    struct RopeTables {
        std::vector<float> inv_freq;       // [rotary_dims / 2]
        std::vector<float> cos_sin_table;  // [context_length, rotary_dims / 2, 2]
        kernels::RopeParams params{};
        kernels::RopeParams rerotation{};  // params with mscale 1 and no table (angles direct)
    };
    Status init_rope(const RopeConfig& rc, int32_t num_positions, RopeTables* out);
    // Lets the backend lay the matrices out its own way (e.g. repacked rows, device memory).
    Status prepare_weights();
    // The backend's copy of a vector the model keeps for its lifetime (norm weights, biases, RoPE
    // tables), made once at load: the vector itself on a host-memory backend; nullptr if empty.
    Expected<const float*> resident(const std::vector<float>& v);
    // The plan array `host` in backend memory: itself on a host-memory backend, else uploaded to
    // `staging` (once per step; every layer reads it).
    template <typename T>
    Expected<const T*> on_backend(const std::vector<T>& host, backend::BackendArray<T>& staging);
    // Norm weights in backend memory, per layer (nullptr where the architecture has none).
    struct LayerNorms {
        const float *attn_norm, *ffn_norm, *attn_post_norm, *ffn_post_norm, *q_norm, *k_norm;
    };
    // The step's plan arrays as the layers read them (backend memory).
    struct StepPlan {
        const int32_t *token_ids, *positions, *store_positions, *slot_mapping, *block_ids, *logit_rows;
        const kernels::AttentionSpan* spans;
        const kernels::KeyOverride* overrides;  // null when the step has none
        const kernels::AttentionSeq* seqs;
        int32_t max_queries_per_seq, max_kv_tokens;
        // batch.mass_seqs' sequences (host memory) and where their mass is summed; null: none.
        const kernels::AttentionSeq* mass_seqs;
        int32_t num_mass_seqs;
        std::vector<float>* key_mass;
    };
    Status upload_plan(const ForwardBatch& batch, StepPlan* plan);
    Status check_kv_shape(const ForwardBatch& batch, const backend::KvMemory& kv) const;
    // Scratch grown for the batch, its plan uploaded, attention planned, x = the rows' embeddings.
    Status begin_step(const ForwardBatch& batch, backend::KvMemory& kv, StepPlan* plan);
    void project_qkv(int32_t layer, const ForwardBatch& batch, const StepPlan& plan, int32_t n);
    void attend(int32_t layer, const ForwardBatch& batch, const StepPlan& plan, backend::KvMemory& kv, int32_t n);
    void run_layer(int32_t layer, const ForwardBatch& batch, const StepPlan& plan, backend::KvMemory& kv, int32_t n);
    void run_attention(int32_t layer, const ForwardBatch& batch, const StepPlan& plan, backend::KvMemory& kv,
                       int32_t n);
    void run_kv_copies(int32_t layer, const ForwardBatch& batch, backend::KvMemory& kv);
    void run_ffn(int32_t layer, int32_t n);

    std::unique_ptr<loader::GgufFile> file_;
    ModelConfig config_;
    ModelWeights weights_;
    backend::Backend* backend_ = nullptr;
    RopeTables rope_global_, rope_local_;                     // local: sliding-window layers only
    std::vector<std::unique_ptr<backend::Buffer>> resident_;  // what resident() uploaded
    std::vector<LayerNorms> norms_;
    const float* output_norm_ = nullptr;
    std::shared_ptr<const void> embedding_prepared_;  // prepare_embedding's (untied tables only)
    // Activations in backend memory, grown per step: x/residual [n, hidden], q/attn [n, q_dim],
    // k/v [n, kv_dim], gate/up [n, ffn]; gathered/normed [logit rows, hidden]; logits where the
    // backend's memory is not the host's.
    backend::BackendArray<float> x_, h_, q_, k_, v_, attn_, gate_, up_, gathered_, normed_, logits_;
    // The step's plan arrays in backend memory (unused on a host-memory backend).
    backend::BackendArray<int32_t> token_ids_, positions_, store_positions_, slot_mapping_, block_ids_, logit_rows_;
    backend::BackendArray<kernels::AttentionSpan> spans_;
    backend::BackendArray<kernels::KeyOverride> overrides_;
    std::vector<kernels::AttentionSeq> mass_seqs_;  // host copies of the measured sequences
    std::vector<float> layer_mass_;                 // one layer's mass, before it is summed
    backend::BackendArray<kernels::AttentionSeq> seqs_;
};

}  // namespace lazyattn::model
