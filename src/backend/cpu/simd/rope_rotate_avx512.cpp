// AVX-512 implementation of rope_rotate.h. Compiled for baseline x86-64; returned only after a
// CPU check.
#include <immintrin.h>

#include "backend/cpu/simd/rope_rotate.h"
#include "core/cpu_features.h"

namespace lazyattn::backend::cpu::simd {
namespace {

__attribute__((target("avx2,fma,avx512f"))) void rope_rotate_avx512(const float* cs, const float* in, float* out,
                                                                    int32_t head_dim, int32_t rotary_dims, bool neox) {
    if (neox) {
        // Pairs (i, i + half): cos and sin of 16 consecutive pairs, de-interleaved from cs.
        const int32_t half = rotary_dims / 2;
        const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        for (int32_t i = 0; i < half; i += 16) {
            const __m512 t0 = _mm512_loadu_ps(cs + 2 * i), t1 = _mm512_loadu_ps(cs + 2 * i + 16);
            const __m512 c = _mm512_permutex2var_ps(t0, even, t1), s = _mm512_permutex2var_ps(t0, odd, t1);
            const __m512 x0 = _mm512_loadu_ps(in + i), x1 = _mm512_loadu_ps(in + i + half);
            _mm512_storeu_ps(out + i, _mm512_fmsub_ps(x0, c, _mm512_mul_ps(x1, s)));
            _mm512_storeu_ps(out + i + half, _mm512_fmadd_ps(x0, s, _mm512_mul_ps(x1, c)));
        }
    } else {
        // Pairs (2i, 2i + 1): cs is laid out like the vector, (cos, sin) per pair.
        for (int32_t i = 0; i < rotary_dims; i += 16) {
            const __m512 t = _mm512_loadu_ps(cs + i);
            const __m512 x = _mm512_loadu_ps(in + i);
            const __m512 swapped = _mm512_permute_ps(x, 0xB1);  // (x1, x0) per pair
            // even lanes x0 c - x1 s, odd lanes x1 c + x0 s
            _mm512_storeu_ps(
                out + i, _mm512_fmaddsub_ps(x, _mm512_moveldup_ps(t), _mm512_mul_ps(swapped, _mm512_movehdup_ps(t))));
        }
    }
    for (int32_t i = rotary_dims; i < head_dim; i += 16) _mm512_storeu_ps(out + i, _mm512_loadu_ps(in + i));
}

}  // namespace

RopeRotateFn rope_rotate_kernel(int32_t head_dim, int32_t rotary_dims) {
    static const bool ok = cpu_features().has_avx512_fma();
    if (!ok || rotary_dims % 32 != 0 || head_dim % 16 != 0 || rotary_dims > head_dim) return nullptr;
    return rope_rotate_avx512;
}

}  // namespace lazyattn::backend::cpu::simd
