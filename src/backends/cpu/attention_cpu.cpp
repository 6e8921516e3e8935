#include "backends/cpu/attention_cpu.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/rope_cpu.h"
#include "core/check.h"

namespace lazyattn::backends::cpu {
namespace {

using kernels::AttentionParams;
using kernels::AttentionSeq;
using kernels::AttentionSpan;

constexpr int32_t kRowsPerTask = 8;
constexpr int32_t kMaxGroup = 16;

inline float dot(const float* a, const float* b, int32_t n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int32_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

inline void axpy(float* y, float a, const float* x, int32_t n) {
#pragma omp simd
    for (int32_t i = 0; i < n; ++i) y[i] += a * x[i];
}

inline void scale(float* y, float a, int32_t n) {
#pragma omp simd
    for (int32_t i = 0; i < n; ++i) y[i] *= a;
}

// Online-softmax state of one query head.
struct HeadState {
    float max_score;
    float denom;
};

// Attends `num_rows` query rows of one sequence for the query heads of KV head `kvh`.
// Scratch sizes: qrot [group * d], krot [block_size * d], scores [group * block_size],
// acc [group * d], cs [rotary_dims].
__attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))
void attend_rows(const AttentionParams& p, const AttentionSeq& seq, int32_t kvh, int32_t row_begin,
                 int32_t row_end, float* qrot, float* krot, float* scores, float* acc, float* cs) {
    const int32_t d = p.head_dim;
    const int32_t bs = p.block_size;
    const int32_t group = p.num_heads / p.num_kv_heads;
    for (int32_t row = row_begin; row < row_end; ++row) {
        const int32_t pos = p.q_pos[row];
        HeadState state[kMaxGroup];
        for (int32_t g = 0; g < group; ++g) state[g] = {-std::numeric_limits<float>::infinity(), 0.0f};
        std::fill(acc, acc + int64_t(group) * d, 0.0f);

        for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
            const AttentionSpan& span = p.spans[si];
            if (span.logical_start > pos || span.num_tokens <= 0) continue;
            const int32_t num_visible = std::min(span.num_tokens, pos - span.logical_start + 1);
            // Rotate the raw query once per span: to p - delta when keys are stored rotated
            // (lazy), to p when each key is rotated to its logical position below (lazy-k).
            const int32_t delta = span.logical_start - span.stored_base;
            rope_cos_sin(p.rope, p.keys_rotated ? pos - delta : pos, cs);
            for (int32_t g = 0; g < group; ++g) {
                const float* q = p.q + (int64_t(row) * p.num_heads + kvh * group + g) * d;
                rope_rotate_with(p.rope, cs, q, qrot + g * d, d);
                scale(qrot + g * d, p.scale, d);
            }
            for (int32_t t0 = 0; t0 < num_visible; t0 += bs) {
                const int32_t n = std::min(bs, num_visible - t0);
                const int32_t block = p.block_ids[span.block_offset + t0 / bs];
                const int64_t base = (int64_t(block) * p.num_kv_heads + kvh) * bs * d;
                const float* k = p.k_cache + base;
                const float* v = p.v_cache + base;
                if (!p.keys_rotated) {
                    for (int32_t j = 0; j < n; ++j) {
                        rope_cos_sin(p.rope, span.logical_start + t0 + j, cs);
                        rope_rotate_with(p.rope, cs, k + j * d, krot + j * d, d);
                    }
                    k = krot;
                }
                for (int32_t g = 0; g < group; ++g) {
                    float* sc = scores + g * bs;
                    float block_max = -std::numeric_limits<float>::infinity();
                    for (int32_t j = 0; j < n; ++j) {
                        sc[j] = dot(qrot + g * d, k + j * d, d);
                        block_max = std::max(block_max, sc[j]);
                    }
                    HeadState& st = state[g];
                    const float new_max = std::max(st.max_score, block_max);
                    const float correction = std::exp(st.max_score - new_max);
                    float* a = acc + g * d;
                    if (correction != 1.0f) scale(a, correction, d);
                    st.denom *= correction;
                    for (int32_t j = 0; j < n; ++j) {
                        const float w = std::exp(sc[j] - new_max);
                        st.denom += w;
                        axpy(a, w, v + j * d, d);
                    }
                    st.max_score = new_max;
                }
            }
        }
        for (int32_t g = 0; g < group; ++g) {
            float* out = p.out + (int64_t(row) * p.num_heads + kvh * group + g) * d;
            const float inv = state[g].denom > 0.0f ? 1.0f / state[g].denom : 0.0f;
            for (int32_t i = 0; i < d; ++i) out[i] = acc[g * d + i] * inv;
        }
    }
}

}  // namespace

void attention(const AttentionParams& p, ThreadPool& pool) {
    const int32_t group = p.num_heads / p.num_kv_heads;
    LA_CHECK(group <= kMaxGroup && p.num_heads % p.num_kv_heads == 0);
    // Tasks: (sequence, kv head, chunk of query rows).
    struct Task {
        int32_t seq, kvh, row_begin, row_end;
    };
    std::vector<Task> tasks;
    for (int32_t s = 0; s < p.num_seqs; ++s) {
        const AttentionSeq& seq = p.seqs[s];
        for (int32_t r = 0; r < seq.num_queries; r += kRowsPerTask) {
            const int32_t begin = seq.query_start + r;
            const int32_t end = seq.query_start + std::min(seq.num_queries, r + kRowsPerTask);
            for (int32_t h = 0; h < p.num_kv_heads; ++h) tasks.push_back({s, h, begin, end});
        }
    }
    const int32_t d = p.head_dim;
    std::atomic<size_t> next{0};
    pool.run_on_all([&](int, int) {
        std::vector<float> qrot(int64_t(group) * d), krot(int64_t(p.block_size) * d),
            scores(int64_t(group) * p.block_size), acc(int64_t(group) * d), cs(p.rope.rotary_dims + 2);
        for (size_t i = next++; i < tasks.size(); i = next++) {
            const Task& t = tasks[i];
            attend_rows(p, p.seqs[t.seq], t.kvh, t.row_begin, t.row_end, qrot.data(), krot.data(),
                        scores.data(), acc.data(), cs.data());
        }
    });
}

}  // namespace lazyattn::backends::cpu
