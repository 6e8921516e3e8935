// Backend: the interface the model's layer loop is written against, one method per op. The
// backend owns device memory and every operation on it: the KV pool (allocate_kv, kv_store,
// kv_copy_rotate), embedding lookup, weights in its own layout (prepare_weight) and
// synchronisation. Pointers are the backend's own memory (host memory for the CPU backend).
// Implementations check nothing a caller could get wrong at run time; shapes are validated where
// the plan is built (model::ForwardBatch::validate).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "backend/kv_memory.h"
#include "core/check.h"
#include "core/status.h"
#include "kernels/params/attention_params.h"
#include "kernels/params/attention_step.h"
#include "kernels/params/matmul_params.h"
#include "kernels/params/rope_params.h"

namespace lazyattn::backend {

// Rows of an embedding table looked up by token id.
struct EmbeddingParams {
    const void* table;  // [vocab, dim] rows of `type` (a GGUF row layout, or fp32)
    kernels::GgmlType type;
    int64_t dim;
    // The backend's own copy of the table (Backend::prepare_embedding, or prepare_weight's when
    // the table is also the LM head), or nullptr: a host backend reads `table`.
    const void* prepared;
    const int32_t* ids;  // [num_rows] in backend memory, checked against the vocabulary by the plan
    int32_t num_rows;
    float scale;  // each row times this (Gemma's sqrt(hidden)); 1 leaves it
    float* out;   // [num_rows, dim]
};

// One logit row's sampling, as engine::Sampler picks a token when nothing changes the logits
// (no penalties, logit_bias or min-p): temperature <= 0 is greedy (the first index of the
// maximum). Otherwise candidates in (logit descending, index ascending) order; top_k keeps the
// first top_k (<= 0: off); top_p keeps the shortest prefix of those whose probabilities at
// temperature 1, normalized over the kept set, reach top_p (>= 1: off); the token is the first
// kept candidate at which the running sum of exp((logit - max) / temperature) reaches
// uniform * (its total over the kept set). `uniform` in [0, 1) is drawn by the host's seeded
// Sampler, so a run is the same whichever side samples.
// A structured-output row carries its grammar's bitmask (host memory, `bitmask_words` words:
// kernels::ref::apply_token_bitmask's layout), applied to the row's logits before all of the
// above, as the host Sampler applies it before temperature, top-k and top-p.
struct SampleRow {
    float temperature = 0.0f;
    int32_t top_k = 0;
    float top_p = 1.0f;
    float uniform = 0.0f;
    const int32_t* bitmask = nullptr;  // null: no mask
    int32_t bitmask_words = 0;
};

// A block of backend memory (host memory for the CPU and reference backends). Its contents are
// read and written by the backend's ops, and by the host only through upload and download.
class Buffer {
public:
    Buffer(void* data, size_t bytes) : data_(data), bytes_(bytes) {}
    virtual ~Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    void* data() const { return data_; }
    size_t bytes() const { return bytes_; }

protected:
    void* data_;
    size_t bytes_;
};

// Host memory, 64-byte aligned (a cache line).
class HostBuffer final : public Buffer {
public:
    explicit HostBuffer(size_t bytes) : Buffer(::operator new(bytes, std::align_val_t(64)), bytes) {}
    ~HostBuffer() override { ::operator delete(data_, std::align_val_t(64)); }
};

// What a model needs of a backend beyond the ops every backend has, checked when it is loaded so
// that a backend lacking one refuses the model up front, naming the architecture.
struct ModelRequirements {
    std::string architecture;
    bool geglu = false;  // Gemma's FFN activation
    int32_t head_dim = 0;
    kernels::RopeParams rope{};  // the global RoPE (the local one has the same pairing and dims)
    bool sliding_window = false;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual int num_threads() const = 0;

    // ---- Memory. A host-memory backend computes on host pointers: the model hands it the plan's
    // host arrays and its own vectors without copying. Any other backend gets every array through
    // allocate + upload, and the host reads results only through download.
    virtual bool host_memory() const { return true; }
    // `bytes` of backend memory (contents undefined), or kResourceExhausted naming the size.
    virtual Expected<std::unique_ptr<Buffer>> allocate(size_t bytes) {
        try {
            return std::unique_ptr<Buffer>(std::make_unique<HostBuffer>(bytes));
        } catch (const std::bad_alloc&) {
            return resource_exhausted("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
        }
    }
    // Host -> backend memory, and backend -> host after every op issued so far has finished.
    virtual void upload(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
    virtual void download(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
    // The first failure of an op (ops return nothing: a backend whose ops can fail at run time,
    // a device, records the first error here); checked by the model after each step.
    virtual Status status() const { return {}; }
    // Refuses a model that needs an op or setting this backend does not have (kUnsupported).
    virtual Status check_supported(const ModelRequirements& r) const {
        (void)r;
        return {};
    }

    virtual void rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps) = 0;
    virtual void matmul(const kernels::MatmulParams& p) = 0;
    // Several products of the same input x (Q, K and V; gate and up). A backend may run them as
    // one op (the CPU: one activation quantization, one parallel region in decode).
    virtual void matmuls(const kernels::MatmulParams* ps, int count) {
        for (int i = 0; i < count; ++i) matmul(ps[i]);
    }
    // A weight matrix in the backend's preferred layout, made once at load and passed back as
    // MatmulParams::w_prepared; nullptr when the backend computes on w as it is.
    virtual std::shared_ptr<const void> prepare_weight(const void* w, kernels::GgmlType type, int64_t in_dim,
                                                       int64_t out_dim) {
        (void)w, (void)type, (void)in_dim, (void)out_dim;
        return nullptr;
    }
    // out = silu(gate) * up over n elements.
    virtual void swiglu(const float* gate, const float* up, float* out, int64_t n) = 0;
    // out = gelu_tanh(gate) * up over n elements (Gemma's GeGLU; kernels::ref::geglu).
    virtual void geglu(const float* gate, const float* up, float* out, int64_t n) = 0;
    // x += y over n elements.
    virtual void add_inplace(float* x, const float* y, int64_t n) = 0;
    // out[i, :] = x[rows[i], :] for i < num_rows (rows in backend memory, each < x's rows).
    virtual void gather_rows(const float* x, const int32_t* rows, int32_t num_rows, int64_t dim, float* out) {
        for (int32_t i = 0; i < num_rows; ++i) {
            std::memcpy(out + i * dim, x + int64_t(rows[i]) * dim, sizeof(float) * dim);
        }
    }
    virtual void rope_apply(const kernels::RopeApplyParams& p) = 0;
    // Plans the step's attention once, before the layers (the layout every layer's call
    // shares); each call with AttentionParams::planned then runs that plan. Backends without a
    // plan ignore it (each call plans for itself).
    virtual Status plan_attention(const kernels::AttentionStep& step) {
        (void)step;
        return {};
    }
    virtual void attention(const kernels::AttentionParams& p) = 0;
    // The attention mass each key of p's sequences receives from their query rows
    // (kernels::ref::attention_mass's layout, into host memory): what selects document tokens by
    // the question (DocumentReuse's @query). Only where attention_mass_supported(); the engine
    // refuses such requests elsewhere, so the default is never reached.
    virtual bool attention_mass_supported() const { return false; }
    virtual void attention_mass(const kernels::AttentionParams& p, float* mass) {
        (void)p, (void)mass;
        LA_CHECK_MSG(false, "attention_mass on a backend without it");
    }

    // out[r] = the squared distance of fresh keys and values of one layer's rows ([num_rows,
    // num_kv_heads, head_dim], fp32, keys in the stored rotation frame) from the pool's at
    // slots[r] (backend::host_kv_deviation), into host memory: what ranks document tokens for
    // CacheBlend's selection (DocumentReuse's @deviation). Only where kv_deviation_supported().
    virtual bool kv_deviation_supported() const { return false; }
    virtual void kv_deviation(const KvMemory& kv, int32_t layer, const float* k_rows, const float* v_rows,
                              const int32_t* slots, int32_t num_rows, float* out) {
        (void)kv, (void)layer, (void)k_rows, (void)v_rows, (void)slots, (void)num_rows, (void)out;
        LA_CHECK_MSG(false, "kv_deviation on a backend without it");
    }

    // The KV pool in this backend's memory, or kResourceExhausted naming the size when it
    // cannot be had.
    virtual Expected<std::unique_ptr<KvMemory>> allocate_kv(const kv::KvShape& shape) = 0;
    // Writes rows of one layer's new keys/values ([num_rows, num_kv_heads, head_dim], fp32) to
    // their slots (block * block_size + offset), rounded once to the pool's type.
    virtual void kv_store(KvMemory& kv, int32_t layer, const float* k_rows, const float* v_rows, const int32_t* slots,
                          int32_t num_rows) = 0;
    // Block-attn's materialization of one span in one layer (see KvCopyRotateParams).
    virtual void kv_copy_rotate(KvMemory& kv, int32_t layer, const KvCopyRotateParams& p) = 0;
    // The embedding table in the backend's layout when it is not also the LM head (tied tables
    // come from prepare_weight); nullptr when the backend reads the table as it is.
    virtual std::shared_ptr<const void> prepare_embedding(const void* table, kernels::GgmlType type, int64_t vocab_size,
                                                          int64_t dim) {
        (void)table, (void)type, (void)vocab_size, (void)dim;
        return nullptr;
    }
    virtual void embedding_lookup(const EmbeddingParams& p) = 0;
    // Sampling where the logits live (a device backend): tokens[r] (host memory) = the token
    // rows[r] (host memory) picks from logits[r, 0:vocab_size) (backend memory; a row with a
    // bitmask is masked in place, its logits not used afterwards), so a step
    // downloads one id per row instead of its logits. Only where device_sampling() is true; the
    // model calls it only for rows a SampleRow describes (no penalties, logit_bias or min-p; a
    // grammar's bitmask uploaded and applied where the logits are).
    virtual bool device_sampling() const { return false; }
    virtual void sample_rows(float* logits, int32_t num_rows, int32_t vocab_size, const SampleRow* rows,
                             int32_t* tokens) {
        (void)logits, (void)num_rows, (void)vocab_size, (void)rows, (void)tokens;
    }
    // Waits until every op issued so far has finished (a no-op where ops run synchronously).
    virtual void synchronize() {}
};

// Creates the CPU backend with `num_threads` threads (0 = all hardware threads).
std::unique_ptr<Backend> make_cpu_backend(int num_threads);
// Creates the backend of scalar reference ops (tests only: slow).
std::unique_ptr<Backend> make_reference_backend();

}  // namespace lazyattn::backend
