// Parameters of a linear layer y = x W^T (+ b). W is fp32, fp16, bf16 or one of the quantized
// block formats (kernels/params/quant_blocks.h); the CPU computes on every one of them in place.
#pragma once

#include <cstdint>

#include "kernels/params/ggml_type.h"

namespace lazyattn::kernels {

// The weight types with a direct kernel: every type llama-quantize writes for the presets
// Q4_0..Q6_K, F16 and BF16 (mixed embedding/output types included): F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K..Q6_K.
inline bool is_weight_type(uint32_t t) {
    switch (static_cast<GgmlType>(t)) {
        case GgmlType::kF32:
        case GgmlType::kF16:
        case GgmlType::kBF16:
        case GgmlType::kQ4_0:
        case GgmlType::kQ4_1:
        case GgmlType::kQ5_0:
        case GgmlType::kQ5_1:
        case GgmlType::kQ8_0:
        case GgmlType::kQ2_K:
        case GgmlType::kQ3_K:
        case GgmlType::kQ4_K:
        case GgmlType::kQ5_K:
        case GgmlType::kQ6_K:
            return true;
        default:
            return false;
    }
}

struct MatmulParams {
    const float* x;  // [num_rows, in_dim]
    const void* w;   // [out_dim, in_dim] row-major (GGUF's layout: dims[0] = in_dim), w_type
    GgmlType w_type;
    const float* bias;  // [out_dim] or nullptr
    float* y;           // [num_rows, out_dim]
    int64_t num_rows;
    int64_t in_dim;
    int64_t out_dim;
    // The backend's own form of w made at load (Backend::prepare_weight), or nullptr. Backends
    // that made one read it instead of w.
    const void* w_prepared = nullptr;
};

}  // namespace lazyattn::kernels
