#include "backend/cpu/elementwise_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/rope_cpu.h"
#include "backend/cpu/simd/swiglu.h"

namespace lazyattn::backend::cpu {

void rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps,
             ThreadPool& pool) {
    pool.parallel_for(
        num_rows,
        [&](int64_t r) {
            const float* xr = x + r * dim;
            float* o = out + r * dim;
            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
            for (int64_t i = 0; i < dim; ++i) sum += xr[i] * xr[i];
            const float inv = 1.0f / std::sqrt(sum / float(dim) + eps);
#pragma omp simd
            for (int64_t i = 0; i < dim; ++i) o[i] = xr[i] * inv * weight[i];
        },
        16);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool) {
    constexpr int64_t kChunk = 4096;
    const simd::SwigluFn fast = simd::swiglu_kernel();
    pool.parallel_for((n + kChunk - 1) / kChunk, [&](int64_t c) {
        const int64_t end = std::min(n, (c + 1) * kChunk);
        if (fast != nullptr) {
            fast(gate + c * kChunk, up + c * kChunk, out + c * kChunk, end - c * kChunk);
            return;
        }
        for (int64_t i = c * kChunk; i < end; ++i) {
            const float g = gate[i];
            out[i] = g / (1.0f + std::exp(-g)) * up[i];
        }
    });
}

void geglu(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool) {
    constexpr int64_t kChunk = 4096;
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    pool.parallel_for((n + kChunk - 1) / kChunk, [&](int64_t c) {
        const int64_t end = std::min(n, (c + 1) * kChunk);
        for (int64_t i = c * kChunk; i < end; ++i) {
            const float g = gate[i];
            // x/2 (1 + tanh z) = x sigmoid(2z): the same value without 1 + tanh z cancelling
            // for negative x.
            const float z = kSqrt2OverPi * (g + 0.044715f * g * g * g);
            out[i] = g / (1.0f + std::exp(-2.0f * z)) * up[i];
        }
    });
}

void add_inplace(float* x, const float* y, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void apply_token_bitmask(float* logits, int32_t vocab_size, const int32_t* bitmask, int32_t bitmask_words) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    for (int32_t w = 0; int64_t(w) * 32 < vocab_size; ++w) {
        const uint32_t word = w < bitmask_words ? uint32_t(bitmask[w]) : 0u;  // past the mask: refused
        if (word == 0xffffffffu) continue;
        const int32_t end = std::min(vocab_size, w * 32 + 32);
        for (int32_t i = w * 32; i < end; ++i) {
            if (((word >> (i - w * 32)) & 1u) == 0) logits[i] = kNegInf;
        }
    }
}

void rope_apply(const kernels::RopeApplyParams& p, ThreadPool& pool) {
    pool.parallel_for(
        p.num_rows,
        [&](int64_t r) {
            std::vector<float> cs(p.rope.rotary_dims + 2), tmp(p.head_dim);
            rope_cos_sin(p.rope, p.positions[r], cs.data());
            for (int32_t h = 0; h < p.num_heads; ++h) {
                float* x = p.x + (r * p.num_heads + h) * p.head_dim;
                rope_rotate_with(p.rope, cs.data(), x, tmp.data(), p.head_dim);
                for (int32_t i = 0; i < p.head_dim; ++i) x[i] = tmp[i];
            }
        },
        16);
}

}  // namespace lazyattn::backend::cpu
