// AVX-512 implementation of swiglu.h. Compiled for baseline x86-64; returned only after a CPU check.
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/simd/exp_avx512.h"
#include "backend/cpu/simd/swiglu.h"
#include "core/cpu_features.h"

namespace lazyattn::backend::cpu::simd {
namespace {

__attribute__((target("avx2,fma,avx512f"))) void swiglu_avx512(const float* gate, const float* up, float* out,
                                                               int64_t n) {
    int64_t i = 0;
    const __m512 one = _mm512_set1_ps(1.0f);
    for (; i + 16 <= n; i += 16) {
        const __m512 g = _mm512_loadu_ps(gate + i);
        // exp16 clamps its input, so a very negative gate gives g / (1 + huge) -> -0, not NaN.
        const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
        _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
    }
    for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace

SwigluFn swiglu_kernel() {
    static const SwigluFn fn = [] { return cpu_features().has_avx512_fma() ? swiglu_avx512 : nullptr; }();
    return fn;
}

}  // namespace lazyattn::backend::cpu::simd
