// Backend: the compute interface the model's layer loop is written against, one method per op.
// Pointers are the backend's own memory (host memory for the CPU backend). Implementations check
// nothing a caller could get wrong at run time; shapes are validated where the plan is built.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/params/attention_params.h"
#include "kernels/params/matmul_params.h"
#include "kernels/params/rope_params.h"

namespace lazyattn::backend {

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
};

// Creates the CPU backend with `num_threads` threads (0 = all hardware threads).
std::unique_ptr<Backend> make_cpu_backend(int num_threads);
// Creates the backend of scalar reference ops (tests only: slow).
std::unique_ptr<Backend> make_reference_backend();

}  // namespace lazyattn::backend
