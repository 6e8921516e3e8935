// Parameters of a linear layer y = x W^T (+ b). W is fp32, fp16, bf16 or one of the quantized
// block formats (kernels/params/quant_blocks.h); the CPU computes on every one of them in place.
#pragma once

#include <cstdint>

namespace lazyattn::kernels {

// Weight element types, numbered as GGUF's tensor types: every type llama-quantize writes for
// the presets Q4_0..Q6_K, F16 and BF16 (mixed embedding/output types included).
enum class WeightType : uint32_t {
    kF32 = 0,
    kF16 = 1,
    kQ4_0 = 2,
    kQ4_1 = 3,
    kQ5_0 = 6,
    kQ5_1 = 7,
    kQ8_0 = 8,
    kQ2_K = 10,
    kQ3_K = 11,
    kQ4_K = 12,
    kQ5_K = 13,
    kQ6_K = 14,
    kBF16 = 30,
};

// The types with a direct kernel (all of the above).
inline bool is_weight_type(uint32_t t) { return t <= 3 || (t >= 6 && t <= 8) || (t >= 10 && t <= 14) || t == 30; }

struct MatmulParams {
    const float* x;  // [num_rows, in_dim]
    const void* w;   // [out_dim, in_dim] row-major (GGUF's layout: dims[0] = in_dim), w_type
    WeightType w_type;
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
