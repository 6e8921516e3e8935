// Prefill attention (many query rows per sequence) over paged bf16 KV with per-span RoPE offsets,
// on tensor cores (mma.sync m16n8k16 bf16, fp32 accumulation), FlashAttention-2 style.
//
// One CTA = 64 query rows of one sequence x one query head; 4 warps, 16 rows each. The keys it
// reads are the sequence's spans in order (segments, then the tail's own blocks), walked as tiles
// of 64 tokens that never cross a span; a tile no row can see is skipped, a tile every row sees
// fully is not masked, others are masked per element by the visibility rule (key logical
// position <= row position), which gives causality inside the tail. K/V tiles are double-
// buffered with cp.async into XOR-swizzled shared memory and read with ldmatrix.
//
// RoPE: the raw query tile is rotated to each row's position p once, kept in fp32 in shared
// memory. lazy: whenever the span's delta changes, the CTA tabulates (cos, sin) at -delta and each
// warp rebuilds its bf16 A fragments as R(-delta) applied to that tile (= the query at p - delta). lazy-k: fragments are built once
// (delta 0) and every K tile is rotated in shared memory to its keys' logical positions after it
// lands. The softmax runs in log2 units with scale*log2(e) folded into the scores.
#pragma once

#include <climits>

#include "backend/cuda/attention_decode_kernel.cuh"
#include "backend/cuda/cuda_attention_params.h"
#include "backend/cuda/device_primitives.cuh"
#include "backend/cuda/rope_device.cuh"

namespace lazyattn::backend::cuda {

template <int D>
struct PrefillShape {
    static_assert(D == 64 || D == 128, "prefill supports head_dim 64 and 128");
    static constexpr int kThreads = 128;
    static constexpr int kBlockM = 64;
    static constexpr int kBlockN = 64;
    static constexpr int kTileElems = kBlockN * D;
    static constexpr int kQStride = D + 8;  // fp32 row stride of the query tile (bank spread)
    static constexpr size_t kKvBytes = size_t(4) * kTileElems * sizeof(bf16);  // K, V x 2 stages
    static constexpr size_t kQBytes = size_t(kBlockM) * kQStride * sizeof(float);
    static constexpr size_t kSmemBytes = kKvBytes + kQBytes + kBlockM * sizeof(int) + (D / 2) * sizeof(float2);
};

// Offset (elements) of (row, col) in a [kBlockN][D] bf16 tile whose 16-byte chunks are XOR-swizzled
// by row so that ldmatrix's 8 rows of one chunk column hit 8 different bank groups.
template <int D>
__device__ __forceinline__ int swz(int row, int col) {
    return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

template <int D>
__device__ __forceinline__ void prefill_load_tile(const CudaAttentionParams& p, const kernels::AttentionSpan& span,
                                                  int t0, int n, int kvh, bf16* ks, bf16* vs) {
    using S = PrefillShape<D>;
    constexpr int kChunksPerRow = D / 8;
    for (int c = threadIdx.x; c < S::kBlockN * kChunksPerRow; c += S::kThreads) {
        const int r = c / kChunksPerRow, ch = c % kChunksPerRow;
        const int dst = swz<D>(r, ch * 8);
        if (r < n) {
            const int t = t0 + r;
            // The span rule's slot: a private row where the span overrides t (sparse recompute).
            const int64_t slot = kernels::span_key_slot(span, p.block_ids, p.overrides, p.block_size, t);
            const int64_t off =
                ((slot / p.block_size * p.num_kv_heads + kvh) * p.block_size + slot % p.block_size) * D + ch * 8;
            cp_async_16(ks + dst, p.k_cache + off, 16);
            cp_async_16(vs + dst, p.v_cache + off, 16);
        } else {
            cp_async_16(ks + dst, p.k_cache, 0);
            cp_async_16(vs + dst, p.v_cache, 0);
        }
    }
}

// lazy-k: rotates rows [0, n) of a landed K tile to logical positions key_pos0 + row.
template <int D>
__device__ __forceinline__ void prefill_rotate_keys(const kernels::RopeParams& rope, bf16* ks, int n, int key_pos0) {
    using S = PrefillShape<D>;
    const int half = rope.rotary_dims / 2;
    for (int idx = threadIdx.x; idx < S::kBlockN * half; idx += S::kThreads) {
        const int r = idx / half, i = idx % half;
        if (r >= n) continue;
        const int a = rope.neox ? i : 2 * i;
        const int b = rope.neox ? i + half : 2 * i + 1;
        const float2 cs = rope_cos_sin(rope, key_pos0 + r, i);
        const float x0 = bf16_to_float(ks[swz<D>(r, a)]);
        const float x1 = bf16_to_float(ks[swz<D>(r, b)]);
        ks[swz<D>(r, a)] = float_to_bf16(x0 * cs.x - x1 * cs.y);
        ks[swz<D>(r, b)] = float_to_bf16(x0 * cs.y + x1 * cs.x);
    }
}

// This warp's A fragments of Q (rows 16w..16w+15): the fp32 tile rotated by -delta, in bf16.
// cs[i] holds (cos, sin) of pair i at -delta (unused when delta is 0).
template <int D>
__device__ __forceinline__ void prefill_build_q(const kernels::RopeParams& rope, const float* qs, const float2* cs,
                                                int warp, int lane, int delta, uint32_t (&qf)[D / 16][4]) {
    using S = PrefillShape<D>;
    const int g = lane / 4, t = lane % 4;
    const float* row0 = qs + (16 * warp + g) * S::kQStride;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
            const int col = 16 * kk + 2 * t + 8 * hi;
            float v[2][2];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                RopeSlot slot{0, 0, true};
                const bool rot = delta != 0 && rope_slot(rope, col + e, &slot);
#pragma unroll
                for (int rr = 0; rr < 2; ++rr) {
                    const float* qrow = row0 + 8 * rr * S::kQStride;
                    v[rr][e] = rot ? rope_rotated(qrow[col + e], qrow[slot.partner], slot.first, cs[slot.pair])
                                   : qrow[col + e];
                }
            }
            qf[kk][2 * hi] = pack_bf16x2(v[0][0], v[0][1]);
            qf[kk][2 * hi + 1] = pack_bf16x2(v[1][0], v[1][1]);
        }
    }
}

template <int D, bool KEYS_ROTATED>
__global__ void __launch_bounds__(128) attention_prefill_kernel(const CudaAttentionParams p) {
    using S = PrefillShape<D>;
    constexpr int BM = S::kBlockM, BN = S::kBlockN;
    LA_DYNAMIC_SMEM(smem);
    bf16* const kv_base = reinterpret_cast<bf16*>(smem);  // K stage 0, K stage 1, V stage 0, V stage 1
    auto k_stage = [&](int s) { return kv_base + s * S::kTileElems; };
    auto v_stage = [&](int s) { return kv_base + (2 + s) * S::kTileElems; };
    float* qs = reinterpret_cast<float*>(smem + S::kKvBytes);                // [BM][kQStride]
    int* row_pos = reinterpret_cast<int*>(smem + S::kKvBytes + S::kQBytes);  // [BM]
    float2* delta_cs = reinterpret_cast<float2*>(row_pos + BM);              // [D/2] at -delta

    const kernels::AttentionSeq seq = p.seqs[blockIdx.z];
    const int q_begin = int(gridDim.x - 1 - blockIdx.x) * BM;  // heaviest (latest) tiles first
    if (q_begin >= seq.num_queries) return;                    // uniform over the CTA
    const int rows_here = min(BM, seq.num_queries - q_begin);
    const int row0 = seq.query_start + q_begin;
    const int head = blockIdx.y;
    const int kvh = head / (p.num_heads / p.num_kv_heads);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;

    for (int r = threadIdx.x; r < BM; r += S::kThreads) row_pos[r] = r < rows_here ? p.q_pos[row0 + r] : INT_MIN;
    __syncthreads();
    int min_pos = INT_MAX, max_pos = INT_MIN;
    for (int r = 0; r < rows_here; ++r) {
        min_pos = min(min_pos, row_pos[r]);
        max_pos = max(max_pos, row_pos[r]);
    }

    // Key tiles any row can see; start the first copy before preparing the queries.
    TileCursor load_c = cursor_at<BN>(p, seq, max_pos, 0);
    TileCursor comp_c = load_c;
    if (load_c.span < seq.span_end) {
        prefill_load_tile<D>(p, p.spans[load_c.span], load_c.t0, min(BN, load_c.visible - load_c.t0), kvh, k_stage(0),
                             v_stage(0));
        cursor_advance<BN>(p, seq.span_end, max_pos, load_c);
    }
    cp_async_commit();

    for (int idx = threadIdx.x; idx < BM * D; idx += S::kThreads) {
        const int r = idx / D, d = idx % D;
        float x = 0.0f;
        if (r < rows_here) {
            const float* qrow = p.q + (int64_t(row0 + r) * p.num_heads + head) * D;
            RopeSlot slot{0, 0, true};
            x = rope_slot(p.rope, d, &slot)
                    ? rope_rotated(qrow[d], qrow[slot.partner], slot.first, rope_cos_sin(p.rope, row_pos[r], slot.pair))
                    : qrow[d];
        }
        qs[r * S::kQStride + d] = x;
    }
    __syncthreads();

    const int pos_a = row_pos[16 * warp + g], pos_b = row_pos[16 * warp + g + 8];
    const float qscale = p.scale * kLog2e;
    uint32_t qf[D / 16][4];
    int cur_delta = INT_MIN;
    if constexpr (!KEYS_ROTATED) prefill_build_q<D>(p.rope, qs, delta_cs, warp, lane, 0, qf);
    float o[D / 8][4];
#pragma unroll
    for (int nd = 0; nd < D / 8; ++nd) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
    float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

    for (int i = 0; comp_c.span < seq.span_end; ++i) {
        if (load_c.span < seq.span_end) {
            const int s = (i + 1) & 1;
            prefill_load_tile<D>(p, p.spans[load_c.span], load_c.t0, min(BN, load_c.visible - load_c.t0), kvh,
                                 k_stage(s), v_stage(s));
            cursor_advance<BN>(p, seq.span_end, max_pos, load_c);
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();  // tile i landed for everyone

        const kernels::AttentionSpan span = p.spans[comp_c.span];
        const int n = min(BN, comp_c.visible - comp_c.t0);
        const int key_pos0 = span.key_position(comp_c.t0);
        bf16* ks = k_stage(i & 1);
        const bf16* vs = v_stage(i & 1);
        if constexpr (!KEYS_ROTATED) {
            prefill_rotate_keys<D>(p.rope, ks, n, key_pos0);
            __syncthreads();
        } else {
            const int delta = span.delta();
            if (delta != cur_delta) {  // uniform over the CTA
                for (int i = threadIdx.x; i < p.rope.rotary_dims / 2; i += S::kThreads) {
                    delta_cs[i] = rope_cos_sin(p.rope, -delta, i);
                }
                __syncthreads();
                prefill_build_q<D>(p.rope, qs, delta_cs, warp, lane, delta, qf);
                cur_delta = delta;
            }
        }

        // S = Q K^T for this warp's 16 rows x 64 keys.
        float s[BN / 8][4];
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
            for (int np = 0; np < BN / 16; ++np) {
                const int krow = 16 * np + 8 * (lane >> 4) + (lane & 7);
                const int kcol = 16 * kk + 8 * ((lane >> 3) & 1);
                uint32_t b[4];
                ldmatrix_x4(b, ks + swz<D>(krow, kcol));
                mma_bf16_16816(s[2 * np], qf[kk], b);
                mma_bf16_16816(s[2 * np + 1], qf[kk], b + 2);
            }
        }

        const int window = p.sliding_window;
        // Every row sees the whole tile iff the earliest row sees its last key and the latest row
        // its first (visibility is monotone in both positions).
        const bool full = n == BN && kernels::key_visible(min_pos, key_pos0 + BN - 1, window) &&
                          kernels::key_visible(max_pos, key_pos0, window);
        // The span's temperature and log-weight (AttentionSpan::logit_scale, logit_bias).
        const float span_scale = qscale * span.logit_scale, span_bias = span.logit_bias * kLog2e;
        float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float x = s[nt][e] * span_scale + span_bias;
                if (!full) {
                    const int col = 8 * nt + 2 * t + (e & 1);
                    const int row_p = e < 2 ? pos_a : pos_b;
                    if (col >= n || !kernels::key_visible(row_p, key_pos0 + col, window)) x = -INFINITY;
                }
                s[nt][e] = x;
            }
            mx_a = fmaxf(mx_a, fmaxf(s[nt][0], s[nt][1]));
            mx_b = fmaxf(mx_b, fmaxf(s[nt][2], s[nt][3]));
        }
        mx_a = fmaxf(mx_a, __shfl_xor_sync(kFullMask, mx_a, 1));
        mx_a = fmaxf(mx_a, __shfl_xor_sync(kFullMask, mx_a, 2));
        mx_b = fmaxf(mx_b, __shfl_xor_sync(kFullMask, mx_b, 1));
        mx_b = fmaxf(mx_b, __shfl_xor_sync(kFullMask, mx_b, 2));
        const float mn_a = fmaxf(m_a, mx_a), mn_b = fmaxf(m_b, mx_b);
        const float base_a = mn_a == -INFINITY ? 0.0f : mn_a;
        const float base_b = mn_b == -INFINITY ? 0.0f : mn_b;
        const float corr_a = exp2f(m_a - base_a), corr_b = exp2f(m_b - base_b);
        float sum_a = 0.0f, sum_b = 0.0f;
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
            s[nt][0] = exp2f(s[nt][0] - base_a);
            s[nt][1] = exp2f(s[nt][1] - base_a);
            s[nt][2] = exp2f(s[nt][2] - base_b);
            s[nt][3] = exp2f(s[nt][3] - base_b);
            sum_a += s[nt][0] + s[nt][1];
            sum_b += s[nt][2] + s[nt][3];
        }
        l_a = l_a * corr_a + sum_a;
        l_b = l_b * corr_b + sum_b;
        m_a = mn_a;
        m_b = mn_b;
#pragma unroll
        for (int nd = 0; nd < D / 8; ++nd) {
            o[nd][0] *= corr_a;
            o[nd][1] *= corr_a;
            o[nd][2] *= corr_b;
            o[nd][3] *= corr_b;
        }

        // O += P V, P taken from the score accumulators in the A-fragment layout.
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            uint32_t a[4];
            a[0] = pack_bf16x2(s[2 * kk][0], s[2 * kk][1]);
            a[1] = pack_bf16x2(s[2 * kk][2], s[2 * kk][3]);
            a[2] = pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            a[3] = pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int np = 0; np < D / 16; ++np) {
                const int vrow = 16 * kk + 8 * ((lane >> 3) & 1) + (lane & 7);
                const int vcol = 16 * np + 8 * (lane >> 4);
                uint32_t b[4];
                ldmatrix_x4_trans(b, vs + swz<D>(vrow, vcol));
                mma_bf16_16816(o[2 * np], a, b);
                mma_bf16_16816(o[2 * np + 1], a, b + 2);
            }
        }
        __syncthreads();  // everyone is done with stage i & 1 before it is refilled
        cursor_advance<BN>(p, seq.span_end, max_pos, comp_c);
    }
    cp_async_wait<0>();

    l_a += __shfl_xor_sync(kFullMask, l_a, 1);
    l_a += __shfl_xor_sync(kFullMask, l_a, 2);
    l_b += __shfl_xor_sync(kFullMask, l_b, 1);
    l_b += __shfl_xor_sync(kFullMask, l_b, 2);
    const float inv_a = l_a > 0.0f ? 1.0f / l_a : 0.0f;
    const float inv_b = l_b > 0.0f ? 1.0f / l_b : 0.0f;
    const int ra = 16 * warp + g, rb = ra + 8;
#pragma unroll
    for (int nd = 0; nd < D / 8; ++nd) {
        const int col = 8 * nd + 2 * t;
        if (ra < rows_here) {
            float* dst = p.out + (int64_t(row0 + ra) * p.num_heads + head) * D + col;
            dst[0] = o[nd][0] * inv_a;
            dst[1] = o[nd][1] * inv_a;
        }
        if (rb < rows_here) {
            float* dst = p.out + (int64_t(row0 + rb) * p.num_heads + head) * D + col;
            dst[0] = o[nd][2] * inv_b;
            dst[1] = o[nd][3] * inv_b;
        }
    }
}

}  // namespace lazyattn::backend::cuda
