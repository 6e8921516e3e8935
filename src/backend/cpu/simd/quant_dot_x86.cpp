// AVX2+FMA and AVX-512 VNNI quantized kernels. Both sets come from one body: they differ only in
// how 32 unsigned x signed byte products are summed into eight int32 lanes (maddubs + madd on
// AVX2, one vpdpbusd with VNNI). Functions carry their own target attributes, so this file is
// compiled for baseline x86-64 and is only entered after the CPU check in quant_dot_dispatch.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/simd/quant_dot_impl.h"

namespace lazyattn::backend::cpu::simd {
namespace {

using kernels::BlockQ4_0;
using kernels::BlockQ4_1;
using kernels::BlockQ8_0;
using kernels::BlockQ8_1;

#define LA_DEFINE_X86_KERNELS(SUFFIX, TARGET, DOT_U8S8_BODY)                                                           \
    TARGET inline __m256i dot_u8s8_##SUFFIX(__m256i a, __m256i b){DOT_U8S8_BODY}                                       \
                                                                                                                       \
    TARGET inline __m256i dot_s8s8_##SUFFIX(__m256i a, __m256i b) {                                                    \
        /* |a| * (b * sign(a)): unsigned x signed, the form both instructions take. */                                 \
        return dot_u8s8_##SUFFIX(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));                                      \
    }                                                                                                                  \
                                                                                                                       \
    TARGET inline float hsum_##SUFFIX(__m256 v) {                                                                      \
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));                                 \
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                                                        \
        s = _mm_add_ss(s, _mm_movehdup_ps(s));                                                                         \
        return _mm_cvtss_f32(s);                                                                                       \
    }                                                                                                                  \
                                                                                                                       \
    TARGET inline __m256i unpack_nibbles_##SUFFIX(const uint8_t* qs) {                                                 \
        const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));                                       \
        return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0f));                    \
    }                                                                                                                  \
                                                                                                                       \
    TARGET void dot_q4_1_##SUFFIX(const void* wv, const uint8_t* x, size_t stride, int rows, int64_t nb, float* out) { \
        const auto* w = static_cast<const BlockQ4_1*>(wv);                                                             \
        __m256 acc[kMaxDotRows];                                                                                       \
        float mins[kMaxDotRows] = {0, 0, 0, 0};                                                                        \
        for (int r = 0; r < kMaxDotRows; ++r) acc[r] = _mm256_setzero_ps();                                            \
        for (int64_t i = 0; i < nb; ++i) {                                                                             \
            const float dw = _cvtsh_ss(w[i].d), mw = _cvtsh_ss(w[i].m);                                                \
            const __m256i bx = unpack_nibbles_##SUFFIX(w[i].qs);                                                       \
            for (int r = 0; r < rows; ++r) {                                                                           \
                const auto* xb = reinterpret_cast<const BlockQ8_1*>(x + r * stride) + i;                               \
                const __m256i by = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb->qs));                       \
                const __m256 p = _mm256_cvtepi32_ps(dot_u8s8_##SUFFIX(bx, by));                                        \
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * _cvtsh_ss(xb->d)), p, acc[r]);                            \
                mins[r] += mw * _cvtsh_ss(xb->s);                                                                      \
            }                                                                                                          \
        }                                                                                                              \
        for (int r = 0; r < rows; ++r) out[r] = hsum_##SUFFIX(acc[r]) + mins[r];                                       \
    }                                                                                                                  \
                                                                                                                       \
    TARGET void dot_q4_0_##SUFFIX(const void* wv, const uint8_t* x, size_t stride, int rows, int64_t nb, float* out) { \
        const auto* w = static_cast<const BlockQ4_0*>(wv);                                                             \
        __m256 acc[kMaxDotRows];                                                                                       \
        for (int r = 0; r < kMaxDotRows; ++r) acc[r] = _mm256_setzero_ps();                                            \
        for (int64_t i = 0; i < nb; ++i) {                                                                             \
            const float dw = _cvtsh_ss(w[i].d);                                                                        \
            const __m256i bx = _mm256_sub_epi8(unpack_nibbles_##SUFFIX(w[i].qs), _mm256_set1_epi8(8));                 \
            for (int r = 0; r < rows; ++r) {                                                                           \
                const auto* xb = reinterpret_cast<const BlockQ8_0*>(x + r * stride) + i;                               \
                const __m256i by = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb->qs));                       \
                const __m256 p = _mm256_cvtepi32_ps(dot_s8s8_##SUFFIX(bx, by));                                        \
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * _cvtsh_ss(xb->d)), p, acc[r]);                            \
            }                                                                                                          \
        }                                                                                                              \
        for (int r = 0; r < rows; ++r) out[r] = hsum_##SUFFIX(acc[r]);                                                 \
    }                                                                                                                  \
                                                                                                                       \
    TARGET void dot_q8_0_##SUFFIX(const void* wv, const uint8_t* x, size_t stride, int rows, int64_t nb, float* out) { \
        const auto* w = static_cast<const BlockQ8_0*>(wv);                                                             \
        __m256 acc[kMaxDotRows];                                                                                       \
        for (int r = 0; r < kMaxDotRows; ++r) acc[r] = _mm256_setzero_ps();                                            \
        for (int64_t i = 0; i < nb; ++i) {                                                                             \
            const float dw = _cvtsh_ss(w[i].d);                                                                        \
            const __m256i bx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs));                          \
            for (int r = 0; r < rows; ++r) {                                                                           \
                const auto* xb = reinterpret_cast<const BlockQ8_0*>(x + r * stride) + i;                               \
                const __m256i by = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb->qs));                       \
                const __m256 p = _mm256_cvtepi32_ps(dot_s8s8_##SUFFIX(bx, by));                                        \
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * _cvtsh_ss(xb->d)), p, acc[r]);                            \
            }                                                                                                          \
        }                                                                                                              \
        for (int r = 0; r < rows; ++r) out[r] = hsum_##SUFFIX(acc[r]);                                                 \
    }                                                                                                                  \
                                                                                                                       \
    /* One block of 32: d = amax / 127, q = round-half-even(x * 127 / amax); returns sum(q). */                        \
    TARGET int quantize_block_##SUFFIX(const float* x, float* d_float, uint16_t* d_out, int8_t* qs) {                  \
        const __m256 sign = _mm256_set1_ps(-0.0f);                                                                     \
        __m256 v[4];                                                                                                   \
        __m256 amax = _mm256_setzero_ps();                                                                             \
        for (int k = 0; k < 4; ++k) {                                                                                  \
            v[k] = _mm256_loadu_ps(x + 8 * k);                                                                         \
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));                                                  \
        }                                                                                                              \
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));                           \
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));                                                                        \
        m = _mm_max_ss(m, _mm_movehdup_ps(m));                                                                         \
        const float max_abs = _mm_cvtss_f32(m);                                                                        \
        *d_float = max_abs / 127.0f;                                                                                   \
        *d_out = _cvtss_sh(*d_float, _MM_FROUND_TO_NEAREST_INT);                                                       \
        const __m256 id = _mm256_set1_ps(max_abs != 0.0f ? 127.0f / max_abs : 0.0f);                                   \
        __m256i q[4];                                                                                                  \
        for (int k = 0; k < 4; ++k) {                                                                                  \
            q[k] = _mm256_cvtps_epi32(                                                                                 \
                _mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));              \
        }                                                                                                              \
        const __m256i total = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));            \
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));                  \
        t = _mm_hadd_epi32(t, t);                                                                                      \
        t = _mm_hadd_epi32(t, t);                                                                                      \
        /* packs work within 128-bit lanes; the permute restores element order. */                                     \
        const __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);                    \
        const __m256i p8 = _mm256_packs_epi16(p16a, p16b);                                                             \
        const __m256i ordered = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));            \
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), ordered);                                                  \
        return _mm_cvtsi128_si32(t);                                                                                   \
    }                                                                                                                  \
                                                                                                                       \
    TARGET void quantize_q8_0_##SUFFIX(const float* x, void* y, int64_t n) {                                           \
        auto* b = static_cast<BlockQ8_0*>(y);                                                                          \
        float d;                                                                                                       \
        for (int64_t i = 0; i < n / 32; ++i) quantize_block_##SUFFIX(x + 32 * i, &d, &b[i].d, b[i].qs);                \
    }                                                                                                                  \
                                                                                                                       \
    TARGET void quantize_q8_1_##SUFFIX(const float* x, void* y, int64_t n) {                                           \
        auto* b = static_cast<BlockQ8_1*>(y);                                                                          \
        for (int64_t i = 0; i < n / 32; ++i) {                                                                         \
            float d;                                                                                                   \
            const int sum = quantize_block_##SUFFIX(x + 32 * i, &d, &b[i].d, b[i].qs);                                 \
            b[i].s = _cvtss_sh(float(sum) * d, _MM_FROUND_TO_NEAREST_INT);                                             \
        }                                                                                                              \
    }

#define LA_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LA_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

LA_DEFINE_X86_KERNELS(avx2, LA_AVX2, return _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1));)
LA_DEFINE_X86_KERNELS(vnni, LA_VNNI, return _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b);)

}  // namespace

const QuantKernels kAvx2Kernels = {"avx2",        dot_q4_0_avx2,      dot_q4_1_avx2,
                                   dot_q8_0_avx2, quantize_q8_0_avx2, quantize_q8_1_avx2,
                                   nullptr,       &kAvx2TypedDots};
const QuantKernels kAvx512VnniKernels = {"avx512vnni",        dot_q4_0_vnni,      dot_q4_1_vnni,
                                         dot_q8_0_vnni,       quantize_q8_0_vnni, quantize_q8_1_vnni,
                                         &kAvx512GemmKernels, &kAvx512TypedDots};

}  // namespace lazyattn::backend::cpu::simd
