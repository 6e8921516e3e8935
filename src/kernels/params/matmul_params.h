// Parameters of a linear layer y = x W^T (+ b). W is fp32 or one of the quantized block formats
// the CPU computes on directly (kernels/params/quant_blocks.h).
#pragma once

#include <cstdint>

namespace lazyattn::kernels {

// Weight element types, numbered as GGUF's tensor types.
enum class WeightType : uint32_t { kF32 = 0, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8 };

struct MatmulParams {
    const float* x;       // [num_rows, in_dim]
    const void* w;        // [out_dim, in_dim] row-major (GGUF's layout: dims[0] = in_dim), w_type
    WeightType w_type;
    const float* bias;    // [out_dim] or nullptr
    float* y;             // [num_rows, out_dim]
    int64_t num_rows;
    int64_t in_dim;
    int64_t out_dim;
    // The backend's own form of w made at load (Backend::prepare_weight), or nullptr. Backends
    // that made one read it instead of w.
    const void* w_prepared = nullptr;
};

}  // namespace lazyattn::kernels
