// AVX-512 implementation of attention_tile.h. Compiled for baseline x86-64; the function is
// returned only after a CPU check.
#include <immintrin.h>

#include <limits>

#include "backend/cpu/simd/attention_tile.h"
#include "backend/cpu/simd/exp_avx512.h"
#include "core/cpu_features.h"

// GCC 12 flags the undefined upper lanes inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace lazyattn::backend::cpu::simd {
namespace {

#define LA_AVX512 __attribute__((target("avx2,fma,avx512f")))

LA_AVX512 void attend_block_avx512(const float* qt, const float* k, const float* v, int d, const int32_t* nfirst,
                                   const int32_t* nvis, float* m, float* l, float* ot) {
    constexpr int J = kAttnBlockKeys;
    __m512 s[J];
    for (int j = 0; j < J; ++j) s[j] = _mm512_setzero_ps();
    for (int dd = 0; dd < d; ++dd) {
        const __m512 q = _mm512_load_ps(qt + 16 * dd);
#pragma GCC unroll 16
        for (int j = 0; j < J; ++j) s[j] = _mm512_fmadd_ps(_mm512_set1_ps(k[j * d + dd]), q, s[j]);
    }
    const __m512i vis = _mm512_loadu_si512(nvis);
    const __m512i first = _mm512_loadu_si512(nfirst);
    const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __mmask16 visible[J];
    __m512 mx = neg_inf;
    for (int j = 0; j < J; ++j) {
        const __m512i jv = _mm512_set1_epi32(j);
        visible[j] = _mm512_cmpgt_epi32_mask(vis, jv) & _mm512_cmple_epi32_mask(first, jv);
        mx = _mm512_mask_max_ps(mx, visible[j], mx, s[j]);
    }
    const __m512 m_old = _mm512_load_ps(m);
    const __m512 m_new = _mm512_max_ps(m_old, mx);
    // Lanes that have seen no key yet keep -inf; use 0 there so no inf - inf appears.
    const __m512 m_use =
        _mm512_mask_blend_ps(_mm512_cmp_ps_mask(m_new, neg_inf, _CMP_EQ_OQ), m_new, _mm512_setzero_ps());
    const __m512 corr = exp16(_mm512_sub_ps(m_old, m_use));
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < J; ++j) {
        s[j] = _mm512_maskz_mov_ps(visible[j], exp16(_mm512_sub_ps(s[j], m_use)));
        sum = _mm512_add_ps(sum, s[j]);
    }
    _mm512_store_ps(m, m_new);
    _mm512_store_ps(l, _mm512_fmadd_ps(_mm512_load_ps(l), corr, sum));
    // Two output dims at a time, each in two chains (even and odd keys), to hide fma latency.
    for (int dd = 0; dd < d; dd += 2) {
        __m512 o0 = _mm512_mul_ps(_mm512_load_ps(ot + 16 * dd), corr), o1 = _mm512_setzero_ps();
        __m512 o2 = _mm512_mul_ps(_mm512_load_ps(ot + 16 * dd + 16), corr), o3 = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int j = 0; j < J; j += 2) {
            o0 = _mm512_fmadd_ps(s[j], _mm512_set1_ps(v[j * d + dd]), o0);
            o2 = _mm512_fmadd_ps(s[j], _mm512_set1_ps(v[j * d + dd + 1]), o2);
            o1 = _mm512_fmadd_ps(s[j + 1], _mm512_set1_ps(v[(j + 1) * d + dd]), o1);
            o3 = _mm512_fmadd_ps(s[j + 1], _mm512_set1_ps(v[(j + 1) * d + dd + 1]), o3);
        }
        _mm512_store_ps(ot + 16 * dd, _mm512_add_ps(o0, o1));
        _mm512_store_ps(ot + 16 * dd + 16, _mm512_add_ps(o2, o3));
    }
}

}  // namespace

AttendBlockFn attend_block_q16() {
    static const AttendBlockFn fn = [] { return cpu_features().has_avx512_fma() ? attend_block_avx512 : nullptr; }();
    return fn;
}

}  // namespace lazyattn::backend::cpu::simd
