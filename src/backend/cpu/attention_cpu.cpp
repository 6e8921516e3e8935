#include "backend/cpu/attention_cpu.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/cpu/rope_cpu.h"
#include "backend/cpu/simd/attention_decode.h"
#include "backend/cpu/simd/attention_tile.h"
#include "backend/cpu/simd/rope_rotate.h"
#include "backend/cpu/span_blocks.h"
#include "core/check.h"
#include "core/cpu_features.h"

namespace lazyattn::backend::cpu {
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

// A span's logit_bias b needs no kernel support: the online-softmax state (m, l, o) holds
// sum exp(s - m) over the keys so far, so lowering m by b first makes those keys' scores read
// b lower than the span's raw ones, and raising m by b after the span restores the reference:
// the span's keys then count as s + b. shift_for_bias(m, -b) before, (m, +b) after.
inline void shift_for_bias(float* m, int32_t n, float b) {
    if (b == 0.0f) return;
    for (int32_t i = 0; i < n; ++i) m[i] += b;  // -inf stays -inf
}

// Online-softmax state of one query head.
struct HeadState {
    float max_score;
    float denom;
};

// Attends `num_rows` query rows of one sequence for the query heads of KV head `kvh`.
// Scratch sizes: qrot [group * d], krot, kbuf, vbuf [block_size * d], scores [group * block_size],
// acc [group * d], cs [rotary_dims], patch [span_block_scratch_bytes]. Compiled once per
// instruction set below (attend_rows_kernel).
__attribute__((always_inline)) inline void attend_rows_body(const AttentionParams& p, const AttentionSeq& seq,
                                                            int32_t kvh, int32_t row_begin, int32_t row_end,
                                                            int32_t g_begin, int32_t g_end, float* qrot, float* krot,
                                                            float* kbuf, float* vbuf, float* scores, float* acc,
                                                            float* cs, char* patch) {
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
            int32_t first, end;
            p.visible_range(span, pos, &first, &end);
            if (first >= end) continue;
            // Rotate the raw query once per span: to p - delta when keys are stored rotated
            // (lazy), to p when each key is rotated to its logical position below (lazy-k).
            rope_cos_sin(p.rope, p.query_rope_position(span, pos), cs);
            for (int32_t g = g_begin; g < g_end; ++g) {
                const float* q = p.q + (int64_t(row) * p.num_heads + kvh * group + g) * d;
                rope_rotate_with(p.rope, cs, q, qrot + g * d, d);
                scale(qrot + g * d, p.scale * span.logit_scale, d);
                state[g].max_score -= span.logit_bias;  // see shift_for_bias
            }
            for (int32_t t0 = first / bs * bs; t0 < end; t0 += bs) {
                const int32_t n = std::min(bs, end - t0);
                const int32_t j0 = std::max(0, first - t0);  // keys before it are outside the window
                const float *k, *v;
                block_kv(p, span_block_kv(p, span, t0 / bs, n, kvh, patch), n, kbuf, vbuf, &k, &v);
                if (!p.keys_rotated) {
                    rotate_keys(p.rope, k, krot, n, d, span.key_position(t0), cs);
                    k = krot;
                }
                for (int32_t g = g_begin; g < g_end; ++g) {
                    float* sc = scores + g * bs;
                    float block_max = -std::numeric_limits<float>::infinity();
                    for (int32_t j = j0; j < n; ++j) {
                        sc[j] = dot(qrot + g * d, k + j * d, d);
                        block_max = std::max(block_max, sc[j]);
                    }
                    HeadState& st = state[g];
                    const float new_max = std::max(st.max_score, block_max);
                    const float correction = std::exp(st.max_score - new_max);
                    float* a = acc + g * d;
                    if (correction != 1.0f) scale(a, correction, d);
                    st.denom *= correction;
                    for (int32_t j = j0; j < n; ++j) {
                        const float w = std::exp(sc[j] - new_max);
                        st.denom += w;
                        axpy(a, w, v + j * d, d);
                    }
                    st.max_score = new_max;
                }
            }
            for (int32_t g = g_begin; g < g_end; ++g) state[g].max_score += span.logit_bias;
        }
        for (int32_t g = g_begin; g < g_end; ++g) {
            float* out = p.out + (int64_t(row) * p.num_heads + kvh * group + g) * d;
            const float inv = state[g].denom > 0.0f ? 1.0f / state[g].denom : 0.0f;
            for (int32_t i = 0; i < d; ++i) out[i] = acc[g * d + i] * inv;
        }
    }
}

// The portable per-row kernel, compiled for each instruction set; the compiler vectorizes the
// loops of the body for the target. Chosen through core/cpu_features.h like every other kernel,
// so LAZYATTN_CPU_ISA lowers it too.
#define LA_ATTEND_ROWS_PARAMS                                                                                          \
    const AttentionParams &p, const AttentionSeq &seq, int32_t kvh, int32_t row_begin, int32_t row_end,                \
        int32_t g_begin, int32_t g_end, float *qrot, float *krot, float *kbuf, float *vbuf, float *scores, float *acc, \
        float *cs, char *patch
#define LA_ATTEND_ROWS_ARGS \
    p, seq, kvh, row_begin, row_end, g_begin, g_end, qrot, krot, kbuf, vbuf, scores, acc, cs, patch

void attend_rows_portable(LA_ATTEND_ROWS_PARAMS) { attend_rows_body(LA_ATTEND_ROWS_ARGS); }
__attribute__((target("avx2,fma"))) void attend_rows_avx2(LA_ATTEND_ROWS_PARAMS) {
    attend_rows_body(LA_ATTEND_ROWS_ARGS);
}
__attribute__((target("arch=x86-64-v4"))) void attend_rows_avx512(LA_ATTEND_ROWS_PARAMS) {
    attend_rows_body(LA_ATTEND_ROWS_ARGS);
}

using AttendRowsFn = void (*)(LA_ATTEND_ROWS_PARAMS);

AttendRowsFn attend_rows_kernel() {
    static const AttendRowsFn fn = [] {
        const CpuFeatures& cpu = cpu_features();
        if (cpu.has_x86_64_v4()) return attend_rows_avx512;
        if (cpu.has_avx2_fma()) return attend_rows_avx2;
        return attend_rows_portable;
    }();
    return fn;
}

#undef LA_ATTEND_ROWS_PARAMS
#undef LA_ATTEND_ROWS_ARGS

// Scratch of one thread for attend_tile (64-byte aligned where the kernel needs it).
struct TileScratch {
    std::vector<float> buf;
    std::vector<char> patch;  // span_block_kv's
    float *qt, *ot, *m, *l, *kpad, *vpad, *krot, *kbuf, *vbuf, *cs;
    int32_t *nvis, *nfirst;
    TileScratch(int32_t d, int32_t rotary_dims) {
        constexpr int L = simd::kAttnTileLanes, B = simd::kAttnBlockKeys;
        buf.resize(size_t(2 * d * L + 2 * L + 5 * B * d + rotary_dims + 2 + 2 * L) + 16);
        float* p = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
        qt = p, ot = qt + d * L, m = ot + d * L, l = m + L, kpad = l + L, vpad = kpad + B * d, krot = vpad + B * d;
        kbuf = krot + B * d, vbuf = kbuf + B * d;
        cs = vbuf + B * d;
        nvis = reinterpret_cast<int32_t*>(cs + rotary_dims + 2);
        nfirst = nvis + L;
        patch.resize(span_block_scratch_bytes(B, d));
    }
};

// The fast path: rows [row_begin, row_end) x the group's heads as one tile of at most 16 query
// lanes (lane = row * group + g), one key block at a time through simd::attend_block_q16.
void attend_tile(const AttentionParams& p, const AttentionSeq& seq, int32_t kvh, int32_t row_begin, int32_t row_end,
                 simd::AttendBlockFn attend_block, TileScratch& t) {
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
        // Lane q sees the span's tokens [first[q], vis[q]) (nothing when vis is 0).
        int32_t vis[L] = {}, first[L] = {};
        int32_t max_vis = 0, min_first = span.num_tokens;
        for (int32_t r = 0; r < rows; ++r) {
            const int32_t pos = p.q_pos[row_begin + r];
            int32_t f, n;
            p.visible_range(span, pos, &f, &n);
            if (f >= n) continue;
            max_vis = std::max(max_vis, n);
            min_first = std::min(min_first, f);
            rope_cos_sin(p.rope, p.query_rope_position(span, pos), t.cs);
            for (int32_t g = 0; g < group; ++g) {
                const int lane = r * group + g;
                vis[lane] = n;
                first[lane] = f;
                const float* q = p.q + (int64_t(row_begin + r) * p.num_heads + kvh * group + g) * d;
                rope_rotate_with(p.rope, t.cs, q, qrot, d);
                for (int32_t i = 0; i < d; ++i) t.qt[i * L + lane] = qrot[i] * p.scale * span.logit_scale;
            }
        }
        if (max_vis == 0) continue;
        shift_for_bias(t.m, L, -span.logit_bias);
        for (int32_t t0 = min_first / B * B; t0 < max_vis; t0 += B) {
            const int32_t n = std::min(B, max_vis - t0);
            const float *k, *v;
            block_kv(p, span_block_kv(p, span, t0 / B, n, kvh, t.patch.data()), n, t.kbuf, t.vbuf, &k, &v);
            if (!p.keys_rotated) {
                rotate_keys(p.rope, k, t.krot, n, d, span.key_position(t0), t.cs);
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
            for (int lane = 0; lane < L; ++lane) {
                t.nvis[lane] = std::clamp(vis[lane] - t0, 0, n);
                t.nfirst[lane] = std::clamp(first[lane] - t0, 0, n);
            }
            attend_block(t.qt, k, v, d, t.nfirst, t.nvis, t.m, t.l, t.ot);
        }
        shift_for_bias(t.m, L, span.logit_bias);
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

// Decode rows (one query per sequence) on the fast path: work items are (sequence, KV head, chunk
// of at most kDecodeChunkBlocks blocks of one span). Each item attends the group's heads to its
// blocks and leaves a partial (max, denominator, output); the partials of a (sequence, KV head)
// are merged in chunk order. Chunks depend only on the sequence's own spans, so the result does
// not depend on the thread count or on the other sequences of the batch.
constexpr int32_t kDecodeChunkBlocks = 32;

using DecodeItem = AttentionPlan::DecodeItem;

// One item: partial softmax state for the `group` heads, written to m, l, o ([group], [group],
// [group * d]).
void attend_decode_item(const AttentionParams& p, const DecodeItem& it, simd::AttendDecodeBlockFn attend_block,
                        float* qrot, float* krot, float* kbuf, float* vbuf, float* cs, char* patch, float* m, float* l,
                        float* o) {
    const int32_t d = p.head_dim, bs = p.block_size;
    const int32_t group = p.num_heads / p.num_kv_heads;
    const AttentionSeq& seq = p.seqs[it.seq];
    const int32_t row = seq.query_start;
    const int32_t pos = p.q_pos[row];
    const AttentionSpan& span = p.spans[it.span];
    int32_t first, end;
    p.visible_range(span, pos, &first, &end);
    rope_cos_sin(p.rope, p.query_rope_position(span, pos), cs);
    for (int32_t g = 0; g < group; ++g) {
        const float* q = p.q + (int64_t(row) * p.num_heads + it.kvh * group + g) * d;
        rope_rotate_with(p.rope, cs, q, qrot + g * d, d);
        scale(qrot + g * d, p.scale * span.logit_scale, d);
        m[g] = -std::numeric_limits<float>::infinity();
        l[g] = 0.0f;
    }
    std::fill(o, o + int64_t(group) * d, 0.0f);
    // Keys stored rotated are read in place, whatever their type; lazy-k rotates each key as read,
    // so its blocks are widened first.
    const simd::AttendDecodeBlockStoredFn attend_stored =
        p.keys_rotated ? simd::attend_decode_block_stored(p.k_dtype, p.v_dtype) : nullptr;
    for (int32_t b = it.block_begin; b < it.block_end; ++b) {
        const int32_t t0 = b * bs;
        const int32_t n = std::min(bs, end - t0);
        const int32_t j0 = std::max(0, first - t0);  // keys before it are outside the window
        const BlockKv raw = span_block_kv(p, span, b, n, it.kvh, patch);
        if (attend_stored != nullptr) {
            attend_stored(qrot, group, raw.k, raw.v, d, j0, n, m, l, o);
            continue;
        }
        const float *k, *v;
        block_kv(p, raw, n, kbuf, vbuf, &k, &v);
        if (!p.keys_rotated) {
            rotate_keys(p.rope, k, krot, n, d, span.key_position(t0), cs);
            k = krot;
        }
        attend_block(qrot, group, k, v, d, j0, n, m, l, o);
    }
    shift_for_bias(m, group, span.logit_bias);  // the partial's scores count as s + b
}

void attention_decode(const AttentionParams& p, AttentionPlan& plan, simd::AttendDecodeBlockFn attend_block,
                      ThreadPool& pool) {
    const int32_t group = p.num_heads / p.num_kv_heads;
    const int32_t d = p.head_dim, bs = p.block_size;
    const std::vector<int32_t>& decode_seqs = plan.decode_seqs;
    const AttentionPlan::DecodeItems& planned = plan.decode_items(p);
    const std::vector<DecodeItem>& items = planned.items;
    const std::vector<int32_t>& first_item = planned.first_item;
    const int64_t per_item = int64_t(group) * (d + 2);
    thread_local std::vector<float> partial;
    partial.resize(items.size() * per_item);
    float* parts = partial.data();
    std::atomic<size_t> next{0};
    pool.run_on_all([&](int, int) {
        thread_local std::vector<float> scratch;
        thread_local std::vector<char> patch;
        scratch.resize(int64_t(group) * d + 3 * int64_t(bs) * d + p.rope.rotary_dims + 2);
        patch.resize(span_block_scratch_bytes(bs, d));
        float* qrot = scratch.data();
        float* krot = qrot + int64_t(group) * d;
        float* kbuf = krot + int64_t(bs) * d;
        float* vbuf = kbuf + int64_t(bs) * d;
        float* cs = vbuf + int64_t(bs) * d;
        for (size_t i = next++; i < items.size(); i = next++) {
            float* m = parts + i * per_item;
            attend_decode_item(p, items[i], attend_block, qrot, krot, kbuf, vbuf, cs, patch.data(), m, m + group,
                               m + 2 * group);
        }
    });
    // Merge each (sequence, KV head)'s partials in chunk order and normalize.
    for (size_t sh = 0; sh + 1 < first_item.size(); ++sh) {
        const int32_t s = decode_seqs[sh / p.num_kv_heads];
        const int32_t kvh = int32_t(sh % p.num_kv_heads);
        const int32_t i0 = first_item[sh], i1 = first_item[sh + 1];
        for (int32_t g = 0; g < group; ++g) {
            float* out = p.out + (int64_t(p.seqs[s].query_start) * p.num_heads + kvh * group + g) * d;
            float max_score = -std::numeric_limits<float>::infinity();
            for (int32_t i = i0; i < i1; ++i) max_score = std::max(max_score, parts[i * per_item + g]);
            std::fill(out, out + d, 0.0f);
            if (max_score == -std::numeric_limits<float>::infinity()) continue;  // sees no key
            float denom = 0.0f;
            for (int32_t i = i0; i < i1; ++i) {
                const float* part = parts + i * per_item;
                const float w = i1 - i0 == 1 ? 1.0f : std::exp(part[g] - max_score);
                denom += w * part[group + g];
                axpy(out, w, part + 2 * group + int64_t(g) * d, d);
            }
            scale(out, denom > 0.0f ? 1.0f / denom : 0.0f, d);
        }
    }
}

// Prefill tasks read every block of their sequence once per query tile; with a 16-bit cache each
// block would be widened once per tile (tens of times). Instead the blocks the multi-row sequences
// read are widened once per call into fp32 scratch, and their tasks get params pointing there
// (block ids remapped to scratch slots; entries other sequences use keep their pool ids).
struct WideBlocks {
    std::vector<float> k, v;
};

// Scratch above this many bytes is not worth it: the tasks widen per tile instead.
constexpr int64_t kMaxWideBytes = int64_t(64) << 20;

// Widens the plan's prefill blocks of this layer into fp32 scratch; *wide then reads them.
void widen_for_prefill(const AttentionParams& p, const AttentionPlan& plan, WideBlocks& w, ThreadPool& pool,
                       AttentionParams* wide) {
    const int64_t per_block = int64_t(p.num_kv_heads) * p.block_size * p.head_dim;
    const std::vector<int32_t>& blocks = plan.wide_blocks;
    w.k.resize(blocks.size() * per_block);
    w.v.resize(blocks.size() * per_block);
    pool.parallel_for(
        int64_t(blocks.size()),
        [&](int64_t i) {
            // A block's heads are contiguous: one conversion per block and tensor.
            kernels::kv_to_f32(p.k_at(blocks[i], 0), p.k_dtype, w.k.data() + i * per_block, per_block);
            kernels::kv_to_f32(p.v_at(blocks[i], 0), p.v_dtype, w.v.data() + i * per_block, per_block);
        },
        4);
    // Private rows over their slots' copies (the slots were not shared with unpatched readers).
    const int32_t d = p.head_dim, bs = p.block_size;
    for (const AttentionPlan::WidePatch& o : plan.wide_patches) {
        for (int32_t h = 0; h < p.num_kv_heads; ++h) {
            const int64_t at = ((int64_t(o.wide_slot) * p.num_kv_heads + h) * bs + o.row) * d;
            kernels::kv_to_f32(p.k_row(o.src_slot, h), p.k_dtype, w.k.data() + at, d);
            kernels::kv_to_f32(p.v_row(o.src_slot, h), p.v_dtype, w.v.data() + at, d);
        }
    }
    *wide = p;
    wide->overrides = nullptr;  // resolved into the scratch blocks above
    wide->k_cache = w.k.data();
    wide->v_cache = w.v.data();
    wide->block_ids = plan.wide_block_ids.data();
    wide->k_dtype = wide->v_dtype = kernels::KvDtype::kF32;
}

}  // namespace

CpuIsa attention_rows_isa() {
    const AttendRowsFn fn = attend_rows_kernel();
    return fn == attend_rows_avx512 ? CpuIsa::kAvx512 : fn == attend_rows_avx2 ? CpuIsa::kAvx2 : CpuIsa::kScalar;
}

void AttentionPlan::build(const kernels::AttentionStep& step) {
    step_ = step;
    built_ = true;
    tasks.clear();
    decode_seqs.clear();
    by_window_.clear();
    wide_blocks.clear();
    wide_block_ids.clear();
    wide_patches.clear();
    const int32_t group = step.num_heads / step.num_kv_heads;
    // The tile kernel serves sequences with several query rows (prefill); decode rows, and
    // shapes it does not cover, take attend_rows.
    tile_ok = simd::attend_block_q16() != nullptr && step.block_size == simd::kAttnBlockKeys &&
              step.head_dim % 16 == 0 && step.head_dim <= 512 && group <= simd::kAttnTileLanes;
    const int32_t tile_rows = tile_ok ? simd::kAttnTileLanes / group : 0;
    decode_ok = simd::attend_decode_block() != nullptr && step.block_size == simd::kDecodeBlockKeys &&
                step.head_dim % 16 == 0 && step.head_dim <= simd::kDecodeMaxHeadDim;
    // Decode rows take attention_decode where the CPU has it; otherwise attend_rows one query
    // head per task, so that the few tasks of a decode step spread evenly over the threads.
    std::vector<int32_t> prefill_seqs;
    for (int32_t s = 0; s < step.num_seqs; ++s) {
        const AttentionSeq& seq = step.seqs[s];
        if (decode_ok && seq.num_queries == 1) {
            decode_seqs.push_back(s);
            continue;
        }
        if (seq.num_queries > 0) prefill_seqs.push_back(s);
        const bool tiled = tile_ok && seq.num_queries >= 2;
        const int32_t heads_per_task = seq.num_queries == 1 ? 1 : group;
        const int32_t rows = tiled ? tile_rows : kRowsPerTask;
        for (int32_t r = 0; r < seq.num_queries; r += rows) {
            const int32_t begin = seq.query_start + r;
            const int32_t end = seq.query_start + std::min(seq.num_queries, r + rows);
            for (int32_t h = 0; h < step.num_kv_heads; ++h) {
                for (int32_t g = 0; g < group; g += heads_per_task) {
                    tasks.push_back({s, h, begin, end, tiled, g, std::min(group, g + heads_per_task)});
                }
            }
        }
    }
    const bool f32 = step.k_dtype == kernels::KvDtype::kF32 && step.v_dtype == kernels::KvDtype::kF32;
    if (f32 || prefill_seqs.empty()) return;
    // Prefill tasks read every block of their sequence once per query tile; with a 16-bit or quantized cache
    // each block would be widened once per tile (tens of times). Instead the blocks they read
    // are widened once per layer into fp32 scratch slots (block ids remapped; entries other
    // sequences use keep their pool ids).
    const int32_t bs = step.block_size;
    wide_block_ids.assign(step.block_ids, step.block_ids + step.num_block_ids);
    std::unordered_map<int32_t, int32_t> slot_of;
    for (int32_t s : prefill_seqs) {
        const AttentionSeq& seq = step.seqs[s];
        const int32_t last_pos = step.q_pos[seq.query_start + seq.num_queries - 1];
        for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
            const AttentionSpan& span = step.spans[si];
            // Causal reach of the last row; the window only hides keys, so widening from the span's
            // start covers every block any row of the sequence reads.
            const int32_t visible = kernels::span_causal_end(span, last_pos);
            if (visible <= 0) continue;
            for (int32_t b = 0; b < (visible + bs - 1) / bs; ++b) {
                const int32_t id = step.block_ids[span.block_offset + b];
                if (add_patched_block(step, span, b, id)) continue;
                auto [it, fresh] = slot_of.emplace(id, int32_t(wide_blocks.size()));
                if (fresh) wide_blocks.push_back(id);
                wide_block_ids[span.block_offset + b] = it->second;
            }
        }
    }
    const int64_t per_block = int64_t(step.num_kv_heads) * bs * step.head_dim;
    if (int64_t(wide_blocks.size()) * per_block * 8 > kMaxWideBytes) {
        wide_blocks.clear();
        wide_block_ids.clear();
        wide_patches.clear();
    }
}

bool AttentionPlan::add_patched_block(const kernels::AttentionStep& step, const AttentionSpan& span, int32_t b,
                                      int32_t id) {
    const int32_t bs = step.block_size;
    const kernels::KeyOverride *first, *end;
    block_overrides(step.overrides, span, b * bs, bs, &first, &end);
    if (first == end) return false;
    // Its own slot: other spans (or sequences) reading the same pool block see the shared rows.
    const int32_t slot = int32_t(wide_blocks.size());
    wide_blocks.push_back(id);
    wide_block_ids[span.block_offset + b] = slot;
    for (const kernels::KeyOverride* o = first; o != end; ++o)
        wide_patches.push_back({slot, o->token - b * bs, o->slot});
    return true;
}

const AttentionPlan::DecodeItems& AttentionPlan::decode_items(const AttentionParams& p) {
    for (const DecodeItems& d : by_window_) {
        if (d.sliding_window == p.sliding_window) return d;
    }
    DecodeItems& out = by_window_.emplace_back();
    out.sliding_window = p.sliding_window;
    const int32_t bs = p.block_size;
    for (int32_t s : decode_seqs) {
        const AttentionSeq& seq = step_.seqs[s];
        const int32_t pos = step_.q_pos[seq.query_start];
        for (int32_t h = 0; h < p.num_kv_heads; ++h) {
            out.first_item.push_back(int32_t(out.items.size()));
            for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
                const AttentionSpan& span = step_.spans[si];
                int32_t first, end;
                p.visible_range(span, pos, &first, &end);
                if (first >= end) continue;
                const int32_t blocks = (end + bs - 1) / bs;
                for (int32_t b = first / bs; b < blocks; b += kDecodeChunkBlocks) {
                    out.items.push_back({s, h, si, b, std::min(blocks, b + kDecodeChunkBlocks)});
                }
            }
        }
    }
    out.first_item.push_back(int32_t(out.items.size()));
    return out;
}

void attention(const AttentionParams& p, ThreadPool& pool) {
    AttentionPlan plan;
    plan.build(kernels::step_of(p));
    attention(p, plan, pool);
}

void attention(const AttentionParams& p, AttentionPlan& plan, ThreadPool& pool) {
    const int32_t group = p.num_heads / p.num_kv_heads;
    LA_CHECK(group <= kMaxGroup && p.num_heads % p.num_kv_heads == 0);
    LA_CHECK(plan.built());
    if (!plan.decode_seqs.empty()) attention_decode(p, plan, simd::attend_decode_block(), pool);
    const std::vector<AttentionPlan::Task>& tasks = plan.tasks;
    if (tasks.empty()) return;
    const simd::AttendBlockFn attend_block = simd::attend_block_q16();
    AttentionParams wide_params;
    const AttentionParams* tp = &p;  // what the tasks below read
    if (!plan.wide_block_ids.empty()) {
        thread_local WideBlocks wide;
        widen_for_prefill(p, plan, wide, pool, &wide_params);
        tp = &wide_params;
    }
    const AttentionParams& pt = *tp;
    const AttendRowsFn attend_rows = attend_rows_kernel();
    const int32_t d = p.head_dim;
    std::atomic<size_t> next{0};
    pool.run_on_all([&](int, int) {
        std::vector<float> qrot(int64_t(group) * d), krot(int64_t(p.block_size) * d), kbuf(krot.size()),
            vbuf(krot.size()), scores(int64_t(group) * p.block_size), acc(int64_t(group) * d),
            cs(p.rope.rotary_dims + 2);
        std::vector<char> patch(span_block_scratch_bytes(p.block_size, d));
        std::unique_ptr<TileScratch> tile;
        for (size_t i = next++; i < tasks.size(); i = next++) {
            const AttentionPlan::Task& t = tasks[i];
            if (t.tile) {
                if (!tile) tile = std::make_unique<TileScratch>(d, p.rope.rotary_dims);
                attend_tile(pt, p.seqs[t.seq], t.kvh, t.begin, t.end, attend_block, *tile);
                continue;
            }
            attend_rows(pt, p.seqs[t.seq], t.kvh, t.begin, t.end, t.g_begin, t.g_end, qrot.data(), krot.data(),
                        kbuf.data(), vbuf.data(), scores.data(), acc.data(), cs.data(), patch.data());
        }
    });
}

}  // namespace lazyattn::backend::cpu
