// Parameters of the standalone RoPE op: rotates rows of heads in place at given positions
// (used to rotate keys before they are stored, and by block-attn's re-rotation).
#pragma once

#include <cstdint>

#include "kernels/params/attention_params.h"

namespace lazyattn::kernels {

struct RopeApplyParams {
    float* x;                  // [num_rows, num_heads, head_dim], rotated in place
    const int32_t* positions;  // [num_rows]
    int32_t num_rows;
    int32_t num_heads;
    int32_t head_dim;
    RopeParams rope;
};

}  // namespace lazyattn::kernels
