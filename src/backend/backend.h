// Backend: the interface the model's layer loop is written against, one method per op. The
// backend owns device memory and every operation on it: the KV pool (allocate_kv, kv_store,
// kv_copy_rotate), embedding lookup, weights in its own layout (prepare_weight) and
// synchronisation. Pointers are the backend's own memory (host memory for the CPU backend).
// Implementations check nothing a caller could get wrong at run time; shapes are validated where
// the plan is built (model::ForwardBatch::validate).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/kv_memory.h"
#include "core/status.h"
#include "kernels/params/attention_params.h"
#include "kernels/params/matmul_params.h"
#include "kernels/params/rope_params.h"

namespace lazyattn::backend {

// Rows of an embedding table looked up by token id.
struct EmbeddingParams {
    const void* table;  // [vocab, dim] rows of `type` (a GGUF row layout, or fp32)
    kernels::WeightType type;
    int64_t dim;
    const int32_t* ids;  // [num_rows], checked against the vocabulary by the plan
    int32_t num_rows;
    float scale;  // each row times this (Gemma's sqrt(hidden)); 1 leaves it
    float* out;   // [num_rows, dim]
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual int num_threads() const = 0;

    virtual void rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps) = 0;
    virtual void matmul(const kernels::MatmulParams& p) = 0;
    // Several products of the same input x (Q, K and V; gate and up). A backend may run them as
    // one op (the CPU: one activation quantization, one parallel region in decode).
    virtual void matmuls(const kernels::MatmulParams* ps, int count) {
        for (int i = 0; i < count; ++i) matmul(ps[i]);
    }
    // A weight matrix in the backend's preferred layout, made once at load and passed back as
    // MatmulParams::w_prepared; nullptr when the backend computes on w as it is.
    virtual std::shared_ptr<const void> prepare_weight(const void* w, kernels::WeightType type, int64_t in_dim,
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
    virtual void rope_apply(const kernels::RopeApplyParams& p) = 0;
    virtual void attention(const kernels::AttentionParams& p) = 0;

    // The KV pool in this backend's memory, or kResourceExhausted naming the size when it
    // cannot be had.
    virtual Expected<std::unique_ptr<KvMemory>> allocate_kv(const kv::KvShape& shape) = 0;
    // Writes rows of one layer's new keys/values ([num_rows, num_kv_heads, head_dim], fp32) to
    // their slots (block * block_size + offset), rounded once to the pool's type.
    virtual void kv_store(KvMemory& kv, int32_t layer, const float* k_rows, const float* v_rows, const int32_t* slots,
                          int32_t num_rows) = 0;
    // Block-attn's materialization of one span in one layer (see KvCopyRotateParams).
    virtual void kv_copy_rotate(KvMemory& kv, int32_t layer, const KvCopyRotateParams& p) = 0;
    virtual void embedding_lookup(const EmbeddingParams& p) = 0;
    // Waits until every op issued so far has finished (a no-op where ops run synchronously).
    virtual void synchronize() {}
};

// Creates the CPU backend with `num_threads` threads (0 = all hardware threads).
std::unique_ptr<Backend> make_cpu_backend(int num_threads);
// Creates the backend of scalar reference ops (tests only: slow).
std::unique_ptr<Backend> make_reference_backend();

}  // namespace lazyattn::backend
