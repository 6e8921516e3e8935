// RoPE on the CPU: the rotation of one head vector, shared by the standalone op and the
// attention kernels (which rotate queries per span, or keys for lazy-k, as they read them).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/params/attention_params.h"

namespace lazyattn::backend::cpu {

// Fills cs[2*i], cs[2*i+1] with cos and sin of the angle of pair i at `position`.
inline void rope_cos_sin(const kernels::RopeParams& rope, int32_t position, float* cs) {
    const int32_t half = rope.rotary_dims / 2;
    if (rope.cos_sin_table != nullptr && position >= 0 && position < rope.table_positions) {
        const float* row = rope.cos_sin_table + int64_t(position) * half * 2;
        for (int32_t i = 0; i < 2 * half; ++i) cs[i] = row[i];
        return;
    }
    for (int32_t i = 0; i < half; ++i) {
        const double angle = double(position) * rope.position_scale * double(rope.inv_freq[i]);
        cs[2 * i] = float(std::cos(angle) * rope.mscale);
        cs[2 * i + 1] = float(std::sin(angle) * rope.mscale);
    }
}

// out = R(angles in cs) in; in and out may not alias. head_dim >= rotary_dims.
inline void rope_rotate_with(const kernels::RopeParams& rope, const float* cs, const float* in, float* out,
                             int32_t head_dim) {
    const int32_t half = rope.rotary_dims / 2;
    if (rope.neox) {
        for (int32_t i = 0; i < half; ++i) {
            const float c = cs[2 * i], s = cs[2 * i + 1];
            const float x0 = in[i], x1 = in[i + half];
            out[i] = x0 * c - x1 * s;
            out[i + half] = x0 * s + x1 * c;
        }
    } else {
        for (int32_t i = 0; i < half; ++i) {
            const float c = cs[2 * i], s = cs[2 * i + 1];
            const float x0 = in[2 * i], x1 = in[2 * i + 1];
            out[2 * i] = x0 * c - x1 * s;
            out[2 * i + 1] = x0 * s + x1 * c;
        }
    }
    for (int32_t i = rope.rotary_dims; i < head_dim; ++i) out[i] = in[i];
}

}  // namespace lazyattn::backend::cpu
