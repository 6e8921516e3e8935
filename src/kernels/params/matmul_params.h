// Parameters of a linear layer y = x W^T (+ b).
#pragma once

#include <cstdint>

namespace lazyattn::kernels {

struct MatmulParams {
    const float* x;     // [num_rows, in_dim]
    const float* w;     // [out_dim, in_dim] row-major (GGUF's layout: dims[0] = in_dim)
    const float* bias;  // [out_dim] or nullptr
    float* y;           // [num_rows, out_dim]
    int64_t num_rows;
    int64_t in_dim;
    int64_t out_dim;
};

}  // namespace lazyattn::kernels
