#include "backends/cpu/attention_cpu.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/rope_cpu.h"
#include "backends/cpu/simd/attention_tile.h"
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
                 int32_t row_end, int32_t g_begin, int32_t g_end, float* qrot, float* krot, float* scores, float* acc,
                 float* cs) {
    const int32_t d = p.head_dim;
    const int32_t bs = p.block_size;
    const int32_t group = p.num_heads / p.num_kv_heads;
    for (int32_t row = row_begin; row < row_end; ++row) {
        const int32_t pos = p.q_pos[row];
        HeadState state[kMaxGroup];
        for (int32_t g = g_begin; g < g_end; ++g) state[g] = {-std::numeric_limits<float>::infinity(), 0.0f};
        std::fill(acc, acc + int64_t(group) * d, 0.0f);

        for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
            const AttentionSpan& span = p.spans[si];
            if (span.logical_start > pos || span.num_tokens <= 0) continue;
            const int32_t num_visible = std::min(span.num_tokens, pos - span.logical_start + 1);
            // Rotate the raw query once per span: to p - delta when keys are stored rotated
            // (lazy), to p when each key is rotated to its logical position below (lazy-k).
            const int32_t delta = span.logical_start - span.stored_base;
            rope_cos_sin(p.rope, p.keys_rotated ? pos - delta : pos, cs);
            for (int32_t g = g_begin; g < g_end; ++g) {
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
                for (int32_t g = g_begin; g < g_end; ++g) {
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
        for (int32_t g = g_begin; g < g_end; ++g) {
            float* out = p.out + (int64_t(row) * p.num_heads + kvh * group + g) * d;
            const float inv = state[g].denom > 0.0f ? 1.0f / state[g].denom : 0.0f;
            for (int32_t i = 0; i < d; ++i) out[i] = acc[g * d + i] * inv;
        }
    }
}


// Scratch of one thread for attend_tile (64-byte aligned where the kernel needs it).
struct TileScratch {
    std::vector<float> buf;
    float *qt, *ot, *m, *l, *kpad, *vpad, *krot, *cs;
    int32_t* nvis;
    TileScratch(int32_t d, int32_t rotary_dims) {
        constexpr int L = simd::kAttnTileLanes, B = simd::kAttnBlockKeys;
        buf.resize(size_t(2 * d * L + 2 * L + 3 * B * d + rotary_dims + 2 + L) + 16);
        float* p = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
        qt = p, ot = qt + d * L, m = ot + d * L, l = m + L, kpad = l + L, vpad = kpad + B * d, krot = vpad + B * d;
        cs = krot + B * d;
        nvis = reinterpret_cast<int32_t*>(cs + rotary_dims + 2);
    }
};

// The fast path: rows [row_begin, row_end) x the group's heads as one tile of at most 16 query
// lanes (lane = row * group + g), one key block at a time through simd::attend_block_q16.
void attend_tile(const AttentionParams& p, const AttentionSeq& seq, int32_t kvh, int32_t row_begin,
                 int32_t row_end, simd::AttendBlockFn attend_block, TileScratch& t) {
    constexpr int L = simd::kAttnTileLanes, B = simd::kAttnBlockKeys;
    const int32_t d = p.head_dim;
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int32_t rows = row_end - row_begin;
    std::fill(t.ot, t.ot + d * L, 0.0f);
    std::fill(t.m, t.m + L, -std::numeric_limits<float>::infinity());
    std::fill(t.l, t.l + L, 0.0f);
    std::fill(t.qt, t.qt + d * L, 0.0f);
    float qrot[512];
    for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
        const AttentionSpan& span = p.spans[si];
        if (span.num_tokens <= 0) continue;
        int32_t vis[L] = {};
        int32_t max_vis = 0;
        const int32_t delta = span.logical_start - span.stored_base;
        for (int32_t r = 0; r < rows; ++r) {
            const int32_t pos = p.q_pos[row_begin + r];
            if (span.logical_start > pos) continue;
            const int32_t n = std::min(span.num_tokens, pos - span.logical_start + 1);
            max_vis = std::max(max_vis, n);
            rope_cos_sin(p.rope, p.keys_rotated ? pos - delta : pos, t.cs);
            for (int32_t g = 0; g < group; ++g) {
                const int lane = r * group + g;
                vis[lane] = n;
                const float* q = p.q + (int64_t(row_begin + r) * p.num_heads + kvh * group + g) * d;
                rope_rotate_with(p.rope, t.cs, q, qrot, d);
                for (int32_t i = 0; i < d; ++i) t.qt[i * L + lane] = qrot[i] * p.scale;
            }
        }
        for (int32_t t0 = 0; t0 < max_vis; t0 += B) {
            const int32_t n = std::min(B, max_vis - t0);
            const int32_t block = p.block_ids[span.block_offset + t0 / B];
            const int64_t base = (int64_t(block) * p.num_kv_heads + kvh) * B * d;
            const float* k = p.k_cache + base;
            const float* v = p.v_cache + base;
            if (!p.keys_rotated) {
                for (int32_t j = 0; j < n; ++j) {
                    rope_cos_sin(p.rope, span.logical_start + t0 + j, t.cs);
                    rope_rotate_with(p.rope, t.cs, k + j * d, t.krot + j * d, d);
                }
                k = t.krot;
            }
            if (n < B) {  // pad: slots past the span's tokens may hold anything
                std::copy(k, k + n * d, t.kpad);
                std::fill(t.kpad + n * d, t.kpad + B * d, 0.0f);
                std::copy(v, v + n * d, t.vpad);
                std::fill(t.vpad + n * d, t.vpad + B * d, 0.0f);
                k = t.kpad;
                v = t.vpad;
            }
            for (int lane = 0; lane < L; ++lane) t.nvis[lane] = std::clamp(vis[lane] - t0, 0, n);
            attend_block(t.qt, k, v, d, t.nvis, t.m, t.l, t.ot);
        }
    }
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t g = 0; g < group; ++g) {
            const int lane = r * group + g;
            float* out = p.out + (int64_t(row_begin + r) * p.num_heads + kvh * group + g) * d;
            const float inv = t.l[lane] > 0.0f ? 1.0f / t.l[lane] : 0.0f;
            for (int32_t i = 0; i < d; ++i) out[i] = t.ot[i * L + lane] * inv;
        }
    }
}

}  // namespace

void attention(const AttentionParams& p, ThreadPool& pool) {
    const int32_t group = p.num_heads / p.num_kv_heads;
    LA_CHECK(group <= kMaxGroup && p.num_heads % p.num_kv_heads == 0);
    // Tasks: (sequence, kv head, chunk of query rows[, query heads]).
    enum { kRows, kTile };
    struct Task {
        int32_t seq, kvh, begin, end;  // query rows
        int kind;
        int32_t g_begin, g_end;        // query heads of the group (kRows)
    };
    // The tile kernel serves sequences with several query rows (prefill); decode rows, and
    // shapes it does not cover, take attend_rows.
    const simd::AttendBlockFn attend_block = simd::attend_block_q16();
    const bool tile_ok = attend_block != nullptr && p.block_size == simd::kAttnBlockKeys && p.head_dim % 16 == 0 &&
                         p.head_dim <= 512 && group <= simd::kAttnTileLanes;
    const int32_t tile_rows = tile_ok ? simd::kAttnTileLanes / group : 0;
    // Decode rows (one query row) take attend_rows one query head per task, so that the few
    // tasks of a decode step spread evenly over the threads.
    std::vector<Task> tasks;
    for (int32_t s = 0; s < p.num_seqs; ++s) {
        const AttentionSeq& seq = p.seqs[s];
        const bool tiled = tile_ok && seq.num_queries >= 2;
        const int32_t heads_per_task = seq.num_queries == 1 ? 1 : group;
        const int32_t step = tiled ? tile_rows : kRowsPerTask;
        for (int32_t r = 0; r < seq.num_queries; r += step) {
            const int32_t begin = seq.query_start + r;
            const int32_t end = seq.query_start + std::min(seq.num_queries, r + step);
            for (int32_t h = 0; h < p.num_kv_heads; ++h) {
                for (int32_t g = 0; g < group; g += heads_per_task) {
                    tasks.push_back({s, h, begin, end, tiled ? kTile : kRows, g, std::min(group, g + heads_per_task)});
                }
            }
        }
    }
    const int32_t d = p.head_dim;
    std::atomic<size_t> next{0};
    pool.run_on_all([&](int, int) {
        std::vector<float> qrot(int64_t(group) * d), krot(int64_t(p.block_size) * d),
            scores(int64_t(group) * p.block_size), acc(int64_t(group) * d), cs(p.rope.rotary_dims + 2);
        std::unique_ptr<TileScratch> tile;
        for (size_t i = next++; i < tasks.size(); i = next++) {
            const Task& t = tasks[i];
            if (t.kind == kTile) {
                if (!tile) tile = std::make_unique<TileScratch>(d, p.rope.rotary_dims);
                attend_tile(p, p.seqs[t.seq], t.kvh, t.begin, t.end, attend_block, *tile);
                continue;
            }
            attend_rows(p, p.seqs[t.seq], t.kvh, t.begin, t.end, t.g_begin, t.g_end, qrot.data(), krot.data(),
                        scores.data(), acc.data(), cs.data());
        }
    });
}

}  // namespace lazyattn::backends::cpu
