// AVX2 decode row dots for Q2_K, Q3_K, Q4_K and Q5_K straight from the GGUF bytes (typed_dot.h's
// TypedDotFn), for the AVX2 set (Q2_K/Q3_K for the AVX-512 set too). The common-form path of typed_dot_avx2.cpp stores each super-block's 256
// unpacked bytes to L1 and reads them back, and ends every super-block with two horizontal sums
// per activation row: in decode, where each weight byte is used by one or a few rows, that costs
// 1.5x Q4_0's time per weight byte. Here the nibbles (and Q5_K's fifth bits) are split in
// registers, each group of 32 takes its scale with one madd, and every row keeps fp32 vector
// accumulators across super-blocks (one convert and FMA per super-block, the horizontal sum once
// per row). The integer sums equal the reference's per super-block; only the float order differs.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/simd/kquant_unpack_avx2.h"
#include "backend/cpu/simd/typed_dot.h"
#include "backend/cpu/simd/typed_dot_k_avx2.h"
#include "kernels/params/quant_blocks.h"

namespace lazyattn::backend::cpu::simd {
namespace {

#define LA_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr size_t kQ8KBytes = sizeof(kernels::BlockQ8_K), kQ8KQs = 4, kQ8KSums = 260;

LA_AVX2 inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
LA_AVX2 inline float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}
LA_AVX2 inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The 12 packed scale bytes of Q4_K/Q5_K as 8 scales (bytes 0..7 of *scales) and the 8 mins,
// each repeated for the two 16-element halves of its group (16 int16, the Q8_K block sums' order).
LA_AVX2 inline __m256i k4_scales_mins(const uint8_t* s, uint8_t* scales) {
    uint32_t u0, u1, u2;
    std::memcpy(&u0, s, 4);
    std::memcpy(&u1, s + 4, 4);
    std::memcpy(&u2, s + 8, 4);
    const uint32_t sc_lo = u0 & 0x3f3f3f3fu, mn_lo = u1 & 0x3f3f3f3fu;
    const uint32_t sc_hi = (u2 & 0x0f0f0f0fu) | (((u0 >> 6) & 0x03030303u) << 4);
    const uint32_t mn_hi = ((u2 >> 4) & 0x0f0f0f0fu) | (((u1 >> 6) & 0x03030303u) << 4);
    std::memcpy(scales, &sc_lo, 4);
    std::memcpy(scales + 4, &sc_hi, 4);
    const __m128i mins8 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, int(mn_hi), int(mn_lo)));
    return _mm256_set_m128i(_mm_unpackhi_epi16(mins8, mins8), _mm_unpacklo_epi16(mins8, mins8));
}

// The super-block's term for each activation row (xb: the rows' Q8_K block of this super-block):
// acc += d * dx * isum and accm += dmin * dx * sum(bsums * mins), in fp32 vectors.
template <int R>
LA_AVX2 inline void accumulate_super_block(const uint8_t* xb, size_t stride, const __m256i* isum, __m256i mins, float d,
                                           float dmin, __m256* acc, __m256* accm) {
    for (int r = 0; r < R; ++r) {
        const uint8_t* xr = xb + r * stride;
        float dx;
        std::memcpy(&dx, xr, 4);
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * dx), acc[r]);
        const __m256i msum = _mm256_madd_epi16(load32(xr + kQ8KSums), mins);
        accm[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * dx), accm[r]);
    }
}

template <bool kQ5, int R>
LA_AVX2 void dot_q45_K_rows(const uint8_t* w, const uint8_t* x, size_t stride, int64_t nsb, float* out) {
    constexpr size_t kBytes = kQ5 ? 176 : 144, kQs = kQ5 ? 48 : 16;
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    __m256 acc[R], accm[R];
    for (int r = 0; r < R; ++r) acc[r] = accm[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; ++i) {
        const uint8_t* b = w + i * kBytes;
        alignas(8) uint8_t scales[8];
        const __m256i mins = k4_scales_mins(b + 4, scales);
        __m256i qh = _mm256_setzero_si256();
        if constexpr (kQ5) qh = load32(b + 16);
        __m256i isum[R];
        for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            // Elements 64c .. 64c + 31 are the low nibbles, 64c + 32 .. 64c + 63 the high ones; Q5_K's
            // fifth bits are bits 2c and 2c + 1 of qh (epi16 shifts are safe: the masks keep one bit
            // per byte).
            const __m256i v = load32(b + kQs + 32 * c);
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if constexpr (kQ5) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4));
            }
            const __m256i s_lo = _mm256_set1_epi16(scales[2 * c]), s_hi = _mm256_set1_epi16(scales[2 * c + 1]);
            for (int r = 0; r < R; ++r) {
                const uint8_t* xq = x + r * stride + i * kQ8KBytes + kQ8KQs + 64 * c;
                const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load32(xq)), s_lo);
                const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load32(xq + 32)), s_hi);
                isum[r] = _mm256_add_epi32(isum[r], _mm256_add_epi32(p_lo, p_hi));
            }
        }
        accumulate_super_block<R>(x + i * kQ8KBytes, stride, isum, mins, half_at(b), half_at(b + 2), acc, accm);
    }
    for (int r = 0; r < R; ++r) out[r] = hsum_ps(acc[r]) - hsum_ps(accm[r]);
}

// --- Q2_K {u8 scales[16]; u8 qs[64]; half d; half dmin} and Q3_K {u8 hmask[32]; u8 qs[64]; u8
// scales[12]; half d}: element 128h + 32j + l (l < 32) is bits 2j of qs[32h + l] (Q3_K: plus 4
// where bit 4h + j of hmask[l] is set), in group of 16 number 8h + 2j + l / 16. Q2_K's groups have
// a 4-bit scale and min, Q3_K's a signed 6-bit scale with the offset 4 x scale as its min.

template <bool kQ3, int R>
LA_AVX2 void dot_q23_K_rows(const uint8_t* w, const uint8_t* x, size_t stride, int64_t nsb, float* out) {
    constexpr size_t kBytes = kQ3 ? 110 : 84, kQs = kQ3 ? 32 : 16;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc[R], accm[R];
    for (int r = 0; r < R; ++r) acc[r] = accm[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; ++i) {
        const uint8_t* b = w + i * kBytes;
        __m256i sc16, mins;
        if constexpr (kQ3) {
            sc16 = kunpack::q3_scales(b + 96);
            mins = _mm256_slli_epi16(sc16, 2);
        } else {
            kunpack::q2_scales_mins(b, &sc16, &mins);
        }
        alignas(32) int16_t scales[16];
        _mm256_store_si256(reinterpret_cast<__m256i*>(scales), sc16);
        __m256i hm = _mm256_setzero_si256();
        if constexpr (kQ3) hm = load32(b);
        __m256i isum[R];
        for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const __m256i v = load32(b + kQs + 32 * h);
            for (int j = 0; j < 4; ++j) {
                __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3);
                if constexpr (kQ3) {
                    const __m256i bit = _mm256_set1_epi8(char(1 << (4 * h + j)));
                    q = _mm256_or_si256(
                        q, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), _mm256_set1_epi8(4)));
                }
                const int k = 8 * h + 2 * j;
                const __m256i sc = _mm256_set_m128i(_mm_set1_epi16(scales[k + 1]), _mm_set1_epi16(scales[k]));
                for (int r = 0; r < R; ++r) {
                    const uint8_t* xq = x + r * stride + i * kQ8KBytes + kQ8KQs + 128 * h + 32 * j;
                    isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(q, load32(xq)), sc));
                }
            }
        }
        const float d = half_at(b + kBytes - (kQ3 ? 2 : 4));
        accumulate_super_block<R>(x + i * kQ8KBytes, stride, isum, mins, d, kQ3 ? d : half_at(b + 82), acc, accm);
    }
    for (int r = 0; r < R; ++r) out[r] = hsum_ps(acc[r]) - hsum_ps(accm[r]);
}

// Kernel<R>(w, x, stride, super-blocks, out) for the 1-4 activation rows of a call.
template <void (*K1)(const uint8_t*, const uint8_t*, size_t, int64_t, float*),
          void (*K2)(const uint8_t*, const uint8_t*, size_t, int64_t, float*),
          void (*K3)(const uint8_t*, const uint8_t*, size_t, int64_t, float*),
          void (*K4)(const uint8_t*, const uint8_t*, size_t, int64_t, float*)>
LA_AVX2 void by_rows(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    const auto* wb = static_cast<const uint8_t*>(w);
    const int64_t nsb = n / kernels::kSuperBlock;
    switch (rows) {
        case 1:
            return K1(wb, x, stride, nsb, out);
        case 2:
            return K2(wb, x, stride, nsb, out);
        case 3:
            return K3(wb, x, stride, nsb, out);
        default:
            return K4(wb, x, stride, nsb, out);
    }
}

template <bool kQ5>
LA_AVX2 void dot_q45_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    by_rows<dot_q45_K_rows<kQ5, 1>, dot_q45_K_rows<kQ5, 2>, dot_q45_K_rows<kQ5, 3>, dot_q45_K_rows<kQ5, 4>>(
        w, x, stride, rows, n, out);
}

template <bool kQ3>
LA_AVX2 void dot_q23_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    by_rows<dot_q23_K_rows<kQ3, 1>, dot_q23_K_rows<kQ3, 2>, dot_q23_K_rows<kQ3, 3>, dot_q23_K_rows<kQ3, 4>>(
        w, x, stride, rows, n, out);
}

}  // namespace

LA_AVX2 void avx2_dot_q4_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    dot_q45_K<false>(w, x, stride, rows, n, out);
}
LA_AVX2 void avx2_dot_q5_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    dot_q45_K<true>(w, x, stride, rows, n, out);
}
LA_AVX2 void avx2_dot_q2_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    dot_q23_K<false>(w, x, stride, rows, n, out);
}
LA_AVX2 void avx2_dot_q3_K(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    dot_q23_K<true>(w, x, stride, rows, n, out);
}

}  // namespace lazyattn::backend::cpu::simd
