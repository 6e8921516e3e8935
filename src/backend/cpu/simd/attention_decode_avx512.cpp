// AVX-512 implementation of attention_decode.h. Compiled for baseline x86-64; the function is
// returned only after a CPU check.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "backend/cpu/simd/attention_decode.h"
#include "backend/cpu/simd/exp_avx512.h"
#include "core/cpu_features.h"

// GCC 12 flags the undefined upper lanes inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace lazyattn::backend::cpu::simd {
namespace {

#define LA_AVX512 __attribute__((target("avx2,fma,f16c,avx512f")))

// Sums each of 16 vectors into one lane: result[j] = sum of the lanes of a[j].
LA_AVX512 inline __m512 transpose_sum16(__m512 a[16]) {
    // 16 -> 8: each 128-bit lane holds (a_j, a_j+1) partial sums interleaved.
    __m512 b[8];
    for (int i = 0; i < 8; ++i) {
        b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    }
    // 8 -> 4: each 128-bit lane holds partial sums of four consecutive vectors, in order.
    __m512 c[4];
    for (int i = 0; i < 4; ++i) {
        const __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
        c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    // 4 -> 2: across 128-bit lanes. e[i] = [vectors 8i..8i+3 (two halves), 8i+4..8i+7 (two halves)].
    __m512 e[2];
    for (int i = 0; i < 2; ++i) {
        e[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    // 2 -> 1: lane group q holds vectors 4q..4q+3.
    return _mm512_add_ps(_mm512_shuffle_f32x4(e[0], e[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(e[0], e[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// Values [16c, 16c + 16) of row j (rows of d values of type T) as fp32, widened or dequantized
// in the register: no pass over the block writes an fp32 copy.
template <kernels::KvDtype T>
LA_AVX512 inline __m512 load16(const void* base, int j, int c, int d) {
    using kernels::KvDtype;
    const auto* bytes = static_cast<const uint8_t*>(base);
    if constexpr (T == KvDtype::kF32) {
        return _mm512_loadu_ps(static_cast<const float*>(base) + int64_t(j) * d + 16 * c);
    } else if constexpr (T == KvDtype::kF16) {
        const auto* h = static_cast<const uint16_t*>(base) + int64_t(j) * d + 16 * c;
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h)));
    } else if constexpr (T == KvDtype::kBF16) {
        const auto* h = static_cast<const uint16_t*>(base) + int64_t(j) * d + 16 * c;
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    } else {
        // A 32-value block: fp16 scale, then 32 int8 (q8_0) or 16 bytes of nibbles (q4_0, the low
        // nibbles are values 0..15, the high ones 16..31). Chunk c is half c & 1 of block c / 2.
        constexpr int kBlockBytes = T == KvDtype::kQ8_0 ? 34 : 18;
        const uint8_t* block = bytes + int64_t(j) * (d / 32) * kBlockBytes + (c >> 1) * kBlockBytes;
        uint16_t half;
        std::memcpy(&half, block, 2);
        const __m512 scale = _mm512_set1_ps(_cvtsh_ss(half));
        __m512i q;
        if constexpr (T == KvDtype::kQ8_0) {
            q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * (c & 1))));
        } else {
            const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2)));
            const __m512i nib = (c & 1) ? _mm512_srli_epi32(b, 4) : _mm512_and_si512(b, _mm512_set1_epi32(0x0f));
            q = _mm512_sub_epi32(nib, _mm512_set1_epi32(8));
        }
        return _mm512_mul_ps(_mm512_cvtepi32_ps(q), scale);
    }
}

// D > 0: the head dim as a compile-time constant (rows stay in registers); D == 0: d at run time.
// KT, VT: the element types of k and v, read as they are stored.
template <int D, kernels::KvDtype KT, kernels::KvDtype VT>
LA_AVX512 void attend_heads(const float* q, int num_heads, const void* k, const void* v, int d_runtime, int first,
                            int n, float* m, float* l, float* o) {
    const int d = D > 0 ? D : d_runtime;
    const int C = d / 16;  // vectors per row
    const __mmask16 visible = __mmask16(((n >= 16 ? 0xffffu : (1u << n) - 1) >> first) << first);
    const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int h = 0; h < num_heads; ++h) {
        const float* qh = q + h * d;
        __m512 qv[kDecodeMaxHeadDim / 16];
        for (int c = 0; c < C; ++c) qv[c] = _mm512_loadu_ps(qh + 16 * c);
        __m512 dots[16];
        for (int j = 0; j < 16; ++j) {
            __m512 acc = _mm512_mul_ps(qv[0], load16<KT>(k, j, 0, d));
            for (int c = 1; c < C; ++c) acc = _mm512_fmadd_ps(qv[c], load16<KT>(k, j, c, d), acc);
            dots[j] = acc;
        }
        const __m512 s = _mm512_mask_mov_ps(neg_inf, visible, transpose_sum16(dots));
        const float m_old = m[h];
        const float m_new = std::max(m_old, _mm512_reduce_max_ps(s));
        // m_old = -inf (first block) gives corr ~ 0, and l and o are 0 then.
        const __m512 p = _mm512_maskz_mov_ps(visible, exp16(_mm512_sub_ps(s, _mm512_set1_ps(m_new))));
        const float corr =
            m_old == m_new ? 1.0f : _mm_cvtss_f32(_mm512_castps512_ps128(exp16(_mm512_set1_ps(m_old - m_new))));
        l[h] = l[h] * corr + _mm512_reduce_add_ps(p);
        alignas(64) float pw[16];
        _mm512_store_ps(pw, p);
        float* oh = o + h * d;
        __m512 acc[kDecodeMaxHeadDim / 16];
        const __m512 cv = _mm512_set1_ps(corr);
        for (int c = 0; c < C; ++c) acc[c] = _mm512_mul_ps(_mm512_loadu_ps(oh + 16 * c), cv);
        for (int j = first; j < n; ++j) {
            const __m512 w = _mm512_set1_ps(pw[j]);
            for (int c = 0; c < C; ++c) acc[c] = _mm512_fmadd_ps(w, load16<VT>(v, j, c, d), acc[c]);
        }
        for (int c = 0; c < C; ++c) _mm512_storeu_ps(oh + 16 * c, acc[c]);
        m[h] = m_new;
    }
}

// Keys stored as q8_0 or q4_0 blocks (32 values, one fp16 scale): the scale is taken out of the
// dot product instead of being applied to every value. For each 32-value group b, the 16 keys'
// integer parts are dotted with the query's group (lanes = keys after one transpose-add tree),
// then multiplied by the 16 keys' scales of that group, gathered once per block. q4_0's offset
// (q - 8) folds into one term per group: q_b . (n - 8) = q_b . n - 8 sum(q_b). Values: each
// key's weight is multiplied by its group's scale once, then the integer parts stream past the
// output rows as for any other type. Per value this costs what an fp16 block costs (a widen, a
// convert, an fma) while reading half (q8_0) or a quarter (q4_0) of the bytes.
template <kernels::KvDtype T>
constexpr int kGroupBytes = T == kernels::KvDtype::kQ8_0 ? 34 : 18;

// Values [32b, 32b + 32) of a quantized row as two vectors of the integer parts, as fp32 (q4_0:
// the nibbles n, without the -8).
template <kernels::KvDtype T>
LA_AVX512 inline void load_group_ints(const uint8_t* group, __m512* lo, __m512* hi) {
    if constexpr (T == kernels::KvDtype::kQ8_0) {
        *lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group + 2))));
        *hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group + 18))));
    } else {
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group + 2)));
        *lo = _mm512_cvtepi32_ps(_mm512_and_si512(b, _mm512_set1_epi32(0x0f)));
        *hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
    }
}

// The scales of group b of 16 rows (row j at rows + j * row_bytes) as fp32 lanes.
template <kernels::KvDtype T>
LA_AVX512 inline __m512 gather_scales(const uint8_t* rows, __m512i row_offsets, int b) {
    const __m512i at = _mm512_add_epi32(row_offsets, _mm512_set1_epi32(b * kGroupBytes<T>));
    // 4 bytes from each scale's address; the scale is the low half (little-endian).
    const __m512i words = _mm512_i32gather_epi32(at, rows, 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words));
}

template <int D, kernels::KvDtype KT, kernels::KvDtype VT>
LA_AVX512 void attend_heads_grouped(const float* q, int num_heads, const void* k, const void* v, int d_runtime,
                                    int first, int n, float* m, float* l, float* o) {
    using kernels::KvDtype;
    constexpr int kMaxGroups = kDecodeMaxHeadDim / 32;
    const int d = D > 0 ? D : d_runtime;
    const int C = d / 16, G = d / 32;
    const auto* kb = static_cast<const uint8_t*>(k);
    const int k_row = G * kGroupBytes<KT>;
    const __mmask16 visible = __mmask16(((n >= 16 ? 0xffffu : (1u << n) - 1) >> first) << first);
    const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512 kscale[kMaxGroups], vscale[kMaxGroups];
    for (int b = 0; b < G; ++b)
        kscale[b] = gather_scales<KT>(kb, _mm512_mullo_epi32(lane, _mm512_set1_epi32(k_row)), b);
    if constexpr (VT != KvDtype::kF16) {
        const int v_row = G * kGroupBytes<VT>;
        const __m512i offsets = _mm512_mullo_epi32(lane, _mm512_set1_epi32(v_row));
        for (int b = 0; b < G; ++b) vscale[b] = gather_scales<VT>(static_cast<const uint8_t*>(v), offsets, b);
    }
    for (int h = 0; h < num_heads; ++h) {
        const float* qh = q + h * d;
        __m512 s = _mm512_setzero_ps();
        for (int b = 0; b < G; ++b) {
            const __m512 q0 = _mm512_loadu_ps(qh + 32 * b), q1 = _mm512_loadu_ps(qh + 32 * b + 16);
            __m512 dots[16];
            for (int j = 0; j < 16; ++j) {
                __m512 lo, hi;
                load_group_ints<KT>(kb + int64_t(j) * k_row + b * kGroupBytes<KT>, &lo, &hi);
                dots[j] = _mm512_fmadd_ps(q0, lo, _mm512_mul_ps(q1, hi));
            }
            __m512 sb = transpose_sum16(dots);
            if constexpr (KT == KvDtype::kQ4_0) {
                sb = _mm512_sub_ps(sb, _mm512_set1_ps(8.0f * _mm512_reduce_add_ps(_mm512_add_ps(q0, q1))));
            }
            s = _mm512_fmadd_ps(sb, kscale[b], s);
        }
        s = _mm512_mask_mov_ps(neg_inf, visible, s);
        const float m_old = m[h];
        const float m_new = std::max(m_old, _mm512_reduce_max_ps(s));
        const __m512 p = _mm512_maskz_mov_ps(visible, exp16(_mm512_sub_ps(s, _mm512_set1_ps(m_new))));
        const float corr =
            m_old == m_new ? 1.0f : _mm_cvtss_f32(_mm512_castps512_ps128(exp16(_mm512_set1_ps(m_old - m_new))));
        l[h] = l[h] * corr + _mm512_reduce_add_ps(p);
        float* oh = o + h * d;
        __m512 acc[kDecodeMaxHeadDim / 16];
        const __m512 cv = _mm512_set1_ps(corr);
        for (int c = 0; c < C; ++c) acc[c] = _mm512_mul_ps(_mm512_loadu_ps(oh + 16 * c), cv);
        if constexpr (VT == KvDtype::kF16) {
            alignas(64) float pw[16];
            _mm512_store_ps(pw, p);
            for (int j = first; j < n; ++j) {
                const __m512 w = _mm512_set1_ps(pw[j]);
                for (int c = 0; c < C; ++c) acc[c] = _mm512_fmadd_ps(w, load16<VT>(v, j, c, d), acc[c]);
            }
        } else {
            // pw[b][j]: key j's weight times its value scale in group b (q4_0: the -8 is applied to
            // the integer parts here, values are few next to keys' dot products).
            alignas(64) float pw[kMaxGroups][16];
            for (int b = 0; b < G; ++b) _mm512_store_ps(pw[b], _mm512_mul_ps(p, vscale[b]));
            const auto* vb = static_cast<const uint8_t*>(v);
            const int v_row = G * kGroupBytes<VT>;
            for (int j = first; j < n; ++j) {
                for (int b = 0; b < G; ++b) {
                    __m512 lo, hi;
                    load_group_ints<VT>(vb + int64_t(j) * v_row + b * kGroupBytes<VT>, &lo, &hi);
                    if constexpr (VT == KvDtype::kQ4_0) {
                        lo = _mm512_sub_ps(lo, _mm512_set1_ps(8.0f));
                        hi = _mm512_sub_ps(hi, _mm512_set1_ps(8.0f));
                    }
                    const __m512 w = _mm512_set1_ps(pw[b][j]);
                    acc[2 * b] = _mm512_fmadd_ps(w, lo, acc[2 * b]);
                    acc[2 * b + 1] = _mm512_fmadd_ps(w, hi, acc[2 * b + 1]);
                }
            }
        }
        for (int c = 0; c < C; ++c) _mm512_storeu_ps(oh + 16 * c, acc[c]);
        m[h] = m_new;
    }
}

// The kernel for one head dim: quantized keys take the grouped kernel, the others attend_heads.
template <int D, kernels::KvDtype KT, kernels::KvDtype VT>
LA_AVX512 inline void attend_heads_of(const float* q, int num_heads, const void* k, const void* v, int d, int first,
                                      int n, float* m, float* l, float* o) {
    if constexpr (kernels::kv_dtype_quantized(KT)) {
        attend_heads_grouped<D, KT, VT>(q, num_heads, k, v, d, first, n, m, l, o);
    } else {
        attend_heads<D, KT, VT>(q, num_heads, k, v, d, first, n, m, l, o);
    }
}

template <kernels::KvDtype KT, kernels::KvDtype VT>
LA_AVX512 void attend_decode_block_typed(const float* q, int num_heads, const void* k, const void* v, int d, int first,
                                         int n, float* m, float* l, float* o) {
    switch (d) {
        case 64:
            return attend_heads_of<64, KT, VT>(q, num_heads, k, v, d, first, n, m, l, o);
        case 128:
            return attend_heads_of<128, KT, VT>(q, num_heads, k, v, d, first, n, m, l, o);
        case 256:
            return attend_heads_of<256, KT, VT>(q, num_heads, k, v, d, first, n, m, l, o);
        default:
            return attend_heads_of<0, KT, VT>(q, num_heads, k, v, d, first, n, m, l, o);  // other multiples of 16
    }
}

LA_AVX512 void attend_decode_block_avx512(const float* q, int num_heads, const float* k, const float* v, int d,
                                          int first, int n, float* m, float* l, float* o) {
    attend_decode_block_typed<kernels::KvDtype::kF32, kernels::KvDtype::kF32>(q, num_heads, k, v, d, first, n, m, l, o);
}

}  // namespace

AttendDecodeBlockStoredFn attend_decode_block_stored(kernels::KvDtype k, kernels::KvDtype v) {
    using kernels::KvDtype;
    if (attend_decode_block() == nullptr) return nullptr;
    // The pairs a pool is likely to hold (llama.cpp's -ctk / -ctv combinations in use); any other
    // pair is widened per block into fp32 first, which is correct but slower.
    static constexpr struct {
        KvDtype k, v;
        AttendDecodeBlockStoredFn fn;
    } kPairs[] = {
        {KvDtype::kF16, KvDtype::kF16, attend_decode_block_typed<KvDtype::kF16, KvDtype::kF16>},
        {KvDtype::kBF16, KvDtype::kBF16, attend_decode_block_typed<KvDtype::kBF16, KvDtype::kBF16>},
        {KvDtype::kQ8_0, KvDtype::kQ8_0, attend_decode_block_typed<KvDtype::kQ8_0, KvDtype::kQ8_0>},
        {KvDtype::kQ4_0, KvDtype::kQ4_0, attend_decode_block_typed<KvDtype::kQ4_0, KvDtype::kQ4_0>},
        {KvDtype::kQ8_0, KvDtype::kF16, attend_decode_block_typed<KvDtype::kQ8_0, KvDtype::kF16>},
        {KvDtype::kQ4_0, KvDtype::kF16, attend_decode_block_typed<KvDtype::kQ4_0, KvDtype::kF16>},
        {KvDtype::kQ4_0, KvDtype::kQ8_0, attend_decode_block_typed<KvDtype::kQ4_0, KvDtype::kQ8_0>},
    };
    for (const auto& p : kPairs) {
        if (p.k == k && p.v == v) return p.fn;
    }
    return nullptr;
}

AttendDecodeBlockFn attend_decode_block() {
    static const AttendDecodeBlockFn fn = [] {
        return cpu_features().has_avx512_fma() ? attend_decode_block_avx512 : nullptr;
    }();
    return fn;
}

}  // namespace lazyattn::backend::cpu::simd
