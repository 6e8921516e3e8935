// Decode attention (one query row per sequence) over paged bf16 KV with per-span RoPE offsets.
//
// One CTA = one sequence x one KV head x one split of the sequence's keys, and it serves all the
// query heads of that KV head (up to GP at once), so each K/V byte is read from HBM once per KV
// head. The keys of a sequence are walked as tiles of kTileTokens tokens span by span (a tile
// never crosses a span); a split takes a contiguous range of those tiles, and a second kernel
// combines the splits' (output, log-sum-exp) pairs.
//
// Tiles stream through a kStages-deep cp.async pipeline in shared memory. Inside a CTA, "sub-warps"
// of D/8 lanes each take their own keys of the tile: lane j holds dims [8j, 8j+8) of the key, so a
// score is 8 FMAs per head per lane plus a log2(D/8)-step shuffle reduction; each sub-warp keeps
// its own online-softmax state, merged through shared memory at the end.
//
// RoPE: the query is rotated to its position p once (pre-scaled by scale*log2(e)). lazy: per span
// it is rotated by -delta (R(p - delta) = R(-delta) R(p)), recomputed only when delta changes.
// lazy-k: each key is rotated to its logical position in registers as it is read.
#pragma once

#include <climits>

#include "backend/cuda/cuda_attention_params.h"
#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/rope_device.cuh"

namespace lazyattn::backend::cuda {

template <int D>
struct DecodeShape {
    static_assert(D == 64 || D == 128, "decode supports head_dim 64 and 128");
    static constexpr int kThreads = 128;
    static constexpr int kLanesPerKey = D / 8;  // one 16-byte vector per lane
    static constexpr int kSubWarps = kThreads / kLanesPerKey;
    static constexpr int kTileTokens = 4096 / D;                     // 16 KiB of K+V per stage
    static constexpr int kKeysPerSubWarp = kTileTokens / kSubWarps;  // 4
    static constexpr int kStages = 4;
    static constexpr int kTileElems = kTileTokens * D;
    static constexpr int kStageBytes = 2 * kTileElems * int(sizeof(bf16));
    static_assert(kKeysPerSubWarp % 2 == 0, "keys are processed in pairs");
};

template <int D, int GP>
constexpr size_t decode_smem_bytes() {
    using S = DecodeShape<D>;
    constexpr size_t pipeline = size_t(S::kStages) * S::kStageBytes;
    constexpr size_t merge = size_t(S::kSubWarps) * GP * (D + 2) * sizeof(float);
    static_assert(merge <= pipeline, "the merge area reuses the pipeline's shared memory");
    return pipeline + size_t(GP) * D * sizeof(float);
}

// Where a split writes when the keys are split (num_splits > 1).
struct DecodeSplitArgs {
    int32_t num_splits;
    float* o_part;    // [num_splits, num_seqs, num_heads, head_dim], normalized partial outputs
    float* lse_part;  // [num_splits, num_seqs, num_heads], log2-sum-exp2 of the scaled scores
};

// Keys of a span a query at pos reaches causally; the sliding window is masked per key below.
__device__ __forceinline__ int span_visible(const kernels::AttentionSpan& s, int pos) {
    return kernels::span_causal_end(s, pos);
}

// Position in a sequence's list of key tiles: span index and first token of the tile.
struct TileCursor {
    int span;
    int t0;
    int visible;  // visible tokens of `span`
};

__device__ __forceinline__ void cursor_settle(const CudaAttentionParams& p, int span_end, int pos, TileCursor& c) {
    while (c.span < span_end) {
        c.visible = span_visible(p.spans[c.span], pos);
        if (c.t0 < c.visible) return;
        ++c.span;
        c.t0 = 0;
    }
}

template <int T>
__device__ __forceinline__ void cursor_advance(const CudaAttentionParams& p, int span_end, int pos, TileCursor& c) {
    c.t0 += T;
    cursor_settle(p, span_end, pos, c);
}

// The cursor at tile number `first` of the sequence.
template <int T>
__device__ TileCursor cursor_at(const CudaAttentionParams& p, const kernels::AttentionSeq& seq, int pos, int first) {
    TileCursor c{seq.span_begin, 0, 0};
    cursor_settle(p, seq.span_end, pos, c);
    while (first > 0 && c.span < seq.span_end) {
        const int tiles = (c.visible + T - 1) / T;
        if (first < tiles) {
            c.t0 = first * T;
            break;
        }
        first -= tiles;
        ++c.span;
        c.t0 = 0;
        cursor_settle(p, seq.span_end, pos, c);
    }
    return c;
}

// Issues the cp.async copies of one tile (rows >= n are zero-filled, never read from HBM).
template <int D>
__device__ __forceinline__ void decode_load_tile(const CudaAttentionParams& p, const kernels::AttentionSpan& span,
                                                 int t0, int n, int kvh, bf16* ks, bf16* vs) {
    using S = DecodeShape<D>;
    constexpr int kChunksPerRow = D / 8;
    for (int c = threadIdx.x; c < S::kTileTokens * kChunksPerRow; c += S::kThreads) {
        const int r = c / kChunksPerRow, ch = c % kChunksPerRow;
        bf16* kd = ks + r * D + ch * 8;
        bf16* vd = vs + r * D + ch * 8;
        if (r < n) {
            const int t = t0 + r;
            // The span rule's slot: a private row where the span overrides t (sparse recompute).
            const int64_t slot = kernels::span_key_slot(span, p.block_ids, p.overrides, p.block_size, t);
            const int64_t off =
                ((slot / p.block_size * p.num_kv_heads + kvh) * p.block_size + slot % p.block_size) * D + ch * 8;
            cp_async_16(kd, p.k_cache + off, 16);
            cp_async_16(vd, p.v_cache + off, 16);
        } else {
            cp_async_16(kd, p.k_cache, 0);
            cp_async_16(vd, p.v_cache, 0);
        }
    }
}

// This lane's 8 query dims for GP heads: q_p rotated by -delta (delta 0: q_p itself).
template <int D, int GP>
__device__ __forceinline__ void decode_load_query(const kernels::RopeParams& rope, const float* q_p, int j, int delta,
                                                  float (&q)[GP][8]) {
    for (int e = 0; e < 8; ++e) {
        const int d = 8 * j + e;
        RopeSlot slot{0, 0, true};
        const bool rotate = delta != 0 && rope_slot(rope, d, &slot);
        const float2 cs = rotate ? rope_cos_sin(rope, -delta, slot.pair) : make_float2(1.0f, 0.0f);
#pragma unroll
        for (int g = 0; g < GP; ++g) {
            const float x = q_p[g * D + d];
            q[g][e] = rotate ? rope_rotated(x, q_p[g * D + slot.partner], slot.first, cs) : x;
        }
    }
}

// Reads this lane's 8 dims of key row `r` from shared memory as floats; lazy-k rotates them to
// logical position `key_pos` (neox partners live in lane j +- rotary_dims/16: one shuffle).
template <int D, bool KEYS_ROTATED>
__device__ __forceinline__ void decode_read_key(const kernels::RopeParams& rope, const bf16* ks, int r, int j,
                                                int key_pos, float (&k)[8]) {
    const uint4 raw = *reinterpret_cast<const uint4*>(ks + r * D + 8 * j);
    unpack_bf16x8(raw, k);
    if constexpr (!KEYS_ROTATED) {
        const int rd = rope.rotary_dims;
        if (rope.neox) {
            const int half = rd / 2;
            const int d0 = 8 * j;
            const int lane = threadIdx.x % 32;
            const int src = d0 < half ? lane + half / 8 : (d0 < rd ? lane - half / 8 : lane);
            uint4 other;
            other.x = __shfl_sync(kFullMask, raw.x, src);
            other.y = __shfl_sync(kFullMask, raw.y, src);
            other.z = __shfl_sync(kFullMask, raw.z, src);
            other.w = __shfl_sync(kFullMask, raw.w, src);
            if (d0 < rd) {
                float partner[8];
                unpack_bf16x8(other, partner);
                const bool first = d0 < half;
#pragma unroll
                for (int e = 0; e < 8; ++e) {
                    const float2 cs = rope_cos_sin(rope, key_pos, first ? d0 + e : d0 + e - half);
                    k[e] = rope_rotated(k[e], partner[e], first, cs);
                }
            }
        } else {
#pragma unroll
            for (int e = 0; e < 8; e += 2) {
                const int d = 8 * j + e;
                if (d < rd) {
                    const float2 cs = rope_cos_sin(rope, key_pos, d / 2);
                    const float x0 = k[e], x1 = k[e + 1];
                    k[e] = x0 * cs.x - x1 * cs.y;
                    k[e + 1] = x0 * cs.y + x1 * cs.x;
                }
            }
        }
    }
}

template <int D, int GP, bool KEYS_ROTATED>
__global__ void __launch_bounds__(128)
    attention_decode_kernel(const CudaAttentionParams p, const DecodeSplitArgs split) {
    using S = DecodeShape<D>;
    constexpr int T = S::kTileTokens;
    constexpr int L = S::kLanesPerKey;
    constexpr int KPS = S::kKeysPerSubWarp;
    LA_DYNAMIC_SMEM(smem);
    auto stage_k = [&](int s) { return reinterpret_cast<bf16*>(smem + s * S::kStageBytes); };
    auto stage_v = [&](int s) { return reinterpret_cast<bf16*>(smem + s * S::kStageBytes) + S::kTileElems; };
    float* q_p = reinterpret_cast<float*>(smem + S::kStages * S::kStageBytes);  // [GP][D]

    const int group = p.num_heads / p.num_kv_heads;
    const int num_chunks = (group + GP - 1) / GP;
    const int kvh = blockIdx.x / num_chunks;
    const int heads_here = min(GP, group - int(blockIdx.x % num_chunks) * GP);
    const int head0 = kvh * group + int(blockIdx.x % num_chunks) * GP;
    const int seq_index = blockIdx.y;
    const int split_index = blockIdx.z;
    const kernels::AttentionSeq seq = p.seqs[seq_index];
    if (seq.num_queries <= 0) return;  // uniform over the CTA
    const int row = seq.query_start;
    const int pos = p.q_pos[row];

    int total = 0;
    for (int si = seq.span_begin; si < seq.span_end; ++si) total += (span_visible(p.spans[si], pos) + T - 1) / T;
    const int per_split = (total + split.num_splits - 1) / split.num_splits;
    const int num_tiles = max(0, min(per_split, total - split_index * per_split));
    TileCursor load_c = cursor_at<T>(p, seq, pos, split_index * per_split);
    TileCursor comp_c = load_c;

    // Pipeline prologue first, so the copies fly while the query is prepared.
#pragma unroll
    for (int s = 0; s < S::kStages - 1; ++s) {
        if (s < num_tiles) {
            decode_load_tile<D>(p, p.spans[load_c.span], load_c.t0, min(T, load_c.visible - load_c.t0), kvh, stage_k(s),
                                stage_v(s));
            cursor_advance<T>(p, seq.span_end, pos, load_c);
        }
        cp_async_commit();
    }

    const float qscale = p.scale * kLog2e;
    for (int idx = threadIdx.x; idx < GP * D; idx += S::kThreads) {
        const int g = idx / D, d = idx % D;
        float x = 0.0f;
        if (g < heads_here) {
            const float* qrow = p.q + (int64_t(row) * p.num_heads + head0 + g) * D;
            RopeSlot slot{0, 0, true};
            x = rope_slot(p.rope, d, &slot)
                    ? rope_rotated(qrow[d], qrow[slot.partner], slot.first, rope_cos_sin(p.rope, pos, slot.pair))
                    : qrow[d];
        }
        q_p[idx] = x * qscale;
    }
    __syncthreads();

    const int sw = threadIdx.x / L;
    const int j = threadIdx.x % L;
    float q[GP][8];
    float m[GP], l[GP], acc[GP][8];
#pragma unroll
    for (int g = 0; g < GP; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
    }
    int cur_delta = INT_MIN;
    if constexpr (!KEYS_ROTATED) decode_load_query<D, GP>(p.rope, q_p, j, 0, q);

    for (int i = 0; i < num_tiles; ++i) {
        cp_async_wait<S::kStages - 2>();
        __syncthreads();  // tile i landed for everyone; stage (i-1) % kStages is free
        if (i + S::kStages - 1 < num_tiles) {
            const int s = (i + S::kStages - 1) % S::kStages;
            decode_load_tile<D>(p, p.spans[load_c.span], load_c.t0, min(T, load_c.visible - load_c.t0), kvh, stage_k(s),
                                stage_v(s));
            cursor_advance<T>(p, seq.span_end, pos, load_c);
        }
        cp_async_commit();

        const kernels::AttentionSpan span = p.spans[comp_c.span];
        const int n = min(T, comp_c.visible - comp_c.t0);
        if constexpr (KEYS_ROTATED) {
            const int delta = span.delta();
            if (delta != cur_delta) {
                decode_load_query<D, GP>(p.rope, q_p, j, delta, q);
                cur_delta = delta;
            }
        }
        const bf16* ks = stage_k(i % S::kStages);
        const bf16* vs = stage_v(i % S::kStages);
        const int key_pos0 = span.key_position(comp_c.t0);
#pragma unroll
        for (int kk = 0; kk < KPS; kk += 2) {
            const int ra = sw * KPS + kk, rb = ra + 1;
            float ka[8], kb[8];
            decode_read_key<D, KEYS_ROTATED>(p.rope, ks, ra, j, key_pos0 + ra, ka);
            decode_read_key<D, KEYS_ROTATED>(p.rope, ks, rb, j, key_pos0 + rb, kb);
            float sa[GP], sb[GP];
#pragma unroll
            for (int g = 0; g < GP; ++g) {
                float x = 0.0f, y = 0.0f;
#pragma unroll
                for (int e = 0; e < 8; ++e) {
                    x = fmaf(q[g][e], ka[e], x);
                    y = fmaf(q[g][e], kb[e], y);
                }
                sa[g] = x;
                sb[g] = y;
            }
#pragma unroll
            for (int o = L / 2; o > 0; o >>= 1) {
#pragma unroll
                for (int g = 0; g < GP; ++g) {
                    sa[g] += __shfl_xor_sync(kFullMask, sa[g], o);
                    sb[g] += __shfl_xor_sync(kFullMask, sb[g], o);
                }
            }
            float va[8], vb[8];
            unpack_bf16x8(*reinterpret_cast<const uint4*>(vs + ra * D + 8 * j), va);
            unpack_bf16x8(*reinterpret_cast<const uint4*>(vs + rb * D + 8 * j), vb);
            const int window = p.sliding_window;  // keys behind it are masked like padding
            const bool valid_a = ra < n && kernels::in_window(pos, key_pos0 + ra, window);
            const bool valid_b = rb < n && kernels::in_window(pos, key_pos0 + rb, window);
            // The span's temperature and log-weight (the query carries scale * log2(e)).
            const float span_bias = span.logit_bias * kLog2e;
#pragma unroll
            for (int g = 0; g < GP; ++g) {
                const float xa = valid_a ? sa[g] * span.logit_scale + span_bias : -INFINITY;
                const float xb = valid_b ? sb[g] * span.logit_scale + span_bias : -INFINITY;
                const float mn = fmaxf(m[g], fmaxf(xa, xb));
                const float base = mn == -INFINITY ? 0.0f : mn;
                const float corr = exp2f(m[g] - base);
                const float pa = exp2f(xa - base), pb = exp2f(xb - base);
                l[g] = l[g] * corr + pa + pb;
#pragma unroll
                for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(pb, vb[e], fmaf(pa, va[e], acc[g][e] * corr));
                m[g] = mn;
            }
        }
        cursor_advance<T>(p, seq.span_end, pos, comp_c);
    }

    // Merge the sub-warps' states (the pipeline's shared memory is free once every copy landed).
    cp_async_wait<0>();
    __syncthreads();
    float* mrg_m = reinterpret_cast<float*>(smem);  // [kSubWarps][GP]
    float* mrg_l = mrg_m + S::kSubWarps * GP;       // [kSubWarps][GP]
    float* mrg_acc = mrg_l + S::kSubWarps * GP;     // [kSubWarps][GP][D]
#pragma unroll
    for (int g = 0; g < GP; ++g) {
        if (j == 0) {
            mrg_m[sw * GP + g] = m[g];
            mrg_l[sw * GP + g] = l[g];
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) mrg_acc[(sw * GP + g) * D + 8 * j + e] = acc[g][e];
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < heads_here * D; idx += S::kThreads) {
        const int g = idx / D, d = idx % D;
        float mx = -INFINITY;
        for (int w = 0; w < S::kSubWarps; ++w) mx = fmaxf(mx, mrg_m[w * GP + g]);
        float sum = 0.0f, o = 0.0f;
        if (mx != -INFINITY) {
            for (int w = 0; w < S::kSubWarps; ++w) {
                const float f = exp2f(mrg_m[w * GP + g] - mx);
                sum = fmaf(mrg_l[w * GP + g], f, sum);
                o = fmaf(mrg_acc[(w * GP + g) * D + d], f, o);
            }
        }
        const float result = sum > 0.0f ? o / sum : 0.0f;
        const int head = head0 + g;
        if (split.num_splits == 1) {
            p.out[(int64_t(row) * p.num_heads + head) * D + d] = result;
        } else {
            const int64_t part = (int64_t(split_index) * p.num_seqs + seq_index) * p.num_heads + head;
            split.o_part[part * D + d] = result;
            if (d == 0) split.lse_part[part] = sum > 0.0f ? mx + log2f(sum) : -INFINITY;
        }
    }
}

// out[row, head] = sum_s 2^(lse_s - max) o_s / sum_s 2^(lse_s - max) over the splits.
template <int D>
__global__ void __launch_bounds__(128)
    attention_decode_combine_kernel(const CudaAttentionParams p, const DecodeSplitArgs split) {
    const int seq_index = blockIdx.x, head = blockIdx.y;
    const kernels::AttentionSeq seq = p.seqs[seq_index];
    if (seq.num_queries <= 0) return;
    constexpr int d_total = D;
    const int64_t stride = int64_t(p.num_seqs) * p.num_heads;
    const int64_t part0 = int64_t(seq_index) * p.num_heads + head;
    float mx = -INFINITY;
    for (int s = 0; s < split.num_splits; ++s) mx = fmaxf(mx, split.lse_part[part0 + s * stride]);
    for (int d = threadIdx.x; d < d_total; d += blockDim.x) {
        float sum = 0.0f, o = 0.0f;
        if (mx != -INFINITY) {
            for (int s = 0; s < split.num_splits; ++s) {
                const float lse = split.lse_part[part0 + s * stride];
                if (lse == -INFINITY) continue;
                const float w = exp2f(lse - mx);
                sum += w;
                o = fmaf(w, split.o_part[(part0 + s * stride) * d_total + d], o);
            }
        }
        p.out[(int64_t(seq.query_start) * p.num_heads + head) * d_total + d] = sum > 0.0f ? o / sum : 0.0f;
    }
}

}  // namespace lazyattn::backend::cuda
