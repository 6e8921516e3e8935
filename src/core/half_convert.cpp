#include "core/half_convert.h"

#include <immintrin.h>

#include "core/cpu_features.h"
#include "core/fp16.h"

namespace lazyattn {
namespace {

// The conversions honour LAZYATTN_CPU_ISA like every other SIMD path (core/cpu_features.h).
bool has_avx512() { return cpu_features().has_avx512_bw_vl(); }
bool has_f16c() { return cpu_features().has_avx2_f16c(); }

__attribute__((target("avx2,f16c"))) void fp16_to_fp32_f16c(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
    for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

__attribute__((target("avx2,f16c"))) void fp32_to_fp16_f16c(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

#define LA_AVX512 __attribute__((target("avx2,f16c,avx512f,avx512bw,avx512vl")))

// GCC 12 reports -Wmaybe-uninitialized inside its own avx512fintrin.h for these conversions
// (the intrinsics start from _mm512_undefined_*(), GCC bug 105593); nothing here is uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

LA_AVX512 void fp16_to_fp32_avx512(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
    }
    for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

LA_AVX512 void fp32_to_fp16_avx512(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

LA_AVX512 void bf16_to_fp32_avx512(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
        _mm512_storeu_si512(dst + i, _mm512_slli_epi32(w, 16));
    }
    for (; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}

// Round to nearest even as fp32_to_bf16: x + 0x7fff + lsb, NaN lanes keep a quiet-NaN pattern.
LA_AVX512 void fp32_to_bf16_avx512(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    for (; i + 16 <= n; i += 16) {
        const __m512i x = _mm512_loadu_si512(src + i);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
        const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, abs_mask), inf);
        r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtepi32_epi16(r));
    }
    for (; i < n; ++i) dst[i] = fp32_to_bf16(src[i]);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

CpuIsa half_convert_isa() {
    if (has_avx512()) return CpuIsa::kAvx512;
    return has_f16c() ? CpuIsa::kAvx2 : CpuIsa::kScalar;
}

void fp16_to_fp32_n(const uint16_t* src, float* dst, int64_t n) {
    if (has_avx512()) return fp16_to_fp32_avx512(src, dst, n);
    if (has_f16c()) return fp16_to_fp32_f16c(src, dst, n);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

void fp32_to_fp16_n(const float* src, uint16_t* dst, int64_t n) {
    if (has_avx512()) return fp32_to_fp16_avx512(src, dst, n);
    if (has_f16c()) return fp32_to_fp16_f16c(src, dst, n);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void bf16_to_fp32_n(const uint16_t* src, float* dst, int64_t n) {
    if (has_avx512()) return bf16_to_fp32_avx512(src, dst, n);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}

void fp32_to_bf16_n(const float* src, uint16_t* dst, int64_t n) {
    if (has_avx512()) return fp32_to_bf16_avx512(src, dst, n);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16(src[i]);
}

}  // namespace lazyattn
