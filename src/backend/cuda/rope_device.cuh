// RoPE on the device, shared by the standalone op, the KV store, the block copy and the attention
// kernels. Angles are pos * position_scale * inv_freq[i]: taken from the cos/sin table when it
// holds the position, else computed in double, reduced to [-pi, pi] and passed to single-precision
// sincos (the scalar reference computes in double; the difference is ~1e-7).
//
// Because angles are linear in the position, R(a) R(b) = R(a + b): the attention kernels rotate
// a query to its position p once and then by -delta per span, instead of to p - delta from scratch.
#pragma once

#include <cmath>

#include "backend/cuda/device_primitives.cuh"
#include "kernels/params/attention_params.h"

namespace lazyattn::backend::cuda {

// (cos, sin) of pair i's angle at integer position `pos` (negative positions by symmetry).
__device__ __forceinline__ float2 rope_cos_sin(const kernels::RopeParams& r, int pos, int i) {
    const int apos = pos < 0 ? -pos : pos;
    float c, s;
    if (r.cos_sin_table != nullptr && apos < r.table_positions) {
        const float* e = r.cos_sin_table + (int64_t(apos) * (r.rotary_dims / 2) + i) * 2;
        c = e[0];
        s = e[1];
    } else {
        const double a = double(apos) * double(r.position_scale) * double(r.inv_freq[i]);
        const double reduced = a - 6.283185307179586477 * rint(a * 0.15915494309189533577);
        // |reduced| <= pi, where the fast intrinsic's absolute error is below 4e-7.
        __sincosf(float(reduced), &s, &c);
    }
    return make_float2(c, pos < 0 ? -s : s);
}

// Where element d of a head vector goes under RoPE: its pair index, the index of its partner and
// whether it is the pair's first element. Returns false for elements past rotary_dims.
struct RopeSlot {
    int pair;
    int partner;
    bool first;
};

__device__ __forceinline__ bool rope_slot(const kernels::RopeParams& r, int d, RopeSlot* slot) {
    if (d >= r.rotary_dims) return false;
    if (r.neox) {
        const int half = r.rotary_dims / 2;
        *slot = d < half ? RopeSlot{d, d + half, true} : RopeSlot{d - half, d - half, false};
    } else {
        *slot = RopeSlot{d / 2, d ^ 1, (d & 1) == 0};
    }
    return true;
}

// Element `self` of a rotated pair, given the partner element and the pair's (cos, sin).
__device__ __forceinline__ float rope_rotated(float self, float partner, bool first, float2 cs) {
    return first ? self * cs.x - partner * cs.y : partner * cs.y + self * cs.x;
}

}  // namespace lazyattn::backend::cuda
