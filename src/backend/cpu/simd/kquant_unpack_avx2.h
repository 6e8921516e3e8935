// The AVX2 unpackers of the K-quant super-blocks into the common form of kernels/ref/kquant_ref.h
// (256 unsigned bytes, per-16 scales and mins), shared by the AVX2 row dots (typed_dot_avx2.cpp)
// and the AVX-512 prefill tiles (typed_dot_avx512.cpp). SIMD shifts and masks; the result is
// byte-identical to the reference unpackers. Only included by files entered after the CPU check.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/ref/kquant_ref.h"

namespace lazyattn::backend::cpu::simd::kunpack {

using kernels::ref::KUnpacked;

#define LA_AVX2 __attribute__((target("avx2,fma,f16c")))

// F16C conversion: exact, like core/fp16.h's, without its branches (it runs once per block).
LA_AVX2 inline float half(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// Bytes equal to `bit` where (v & bit) != 0, else 0 (bit is one set bit).
LA_AVX2 inline __m256i bit_to(__m256i v, int bit, int value) {
    const __m256i b = _mm256_set1_epi8(char(bit));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, b), b), _mm256_set1_epi8(char(value)));
}

LA_AVX2 inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
LA_AVX2 inline void store32(uint8_t* p, __m256i v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), v); }

LA_AVX2 inline void k4_scales(const uint8_t* s, KUnpacked* u) {
    for (int j = 0; j < 8; ++j) {
        const int sc = j < 4 ? (s[j] & 63) : ((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        const int m = j < 4 ? (s[j + 4] & 63) : ((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
        u->scale[2 * j] = u->scale[2 * j + 1] = int16_t(sc);
        u->min[2 * j] = u->min[2 * j + 1] = int16_t(m);
    }
}

// (Q2_K) The 16 bytes (min << 4 | scale) as 16 int16 scales and 16 int16 mins (a scalar loop here
// cost more than the quants).
LA_AVX2 inline void q2_scales_mins(const uint8_t* b, __m256i* scales, __m256i* mins) {
    const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    const __m128i m4 = _mm_set1_epi8(0x0f);
    *scales = _mm256_cvtepu8_epi16(_mm_and_si128(sm, m4));
    *mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4));
}

// (Q3_K) The 16 signed 6-bit scales as int16 from the 12 packed bytes: scale k has its low 4 bits
// in nibble k / 8 of byte k % 8 and its high 2 bits in bits 2 (k / 4) of byte 8 + k % 4, minus 32;
// four scales per 32-bit word.
LA_AVX2 inline __m256i q3_scales(const uint8_t* s) {
    uint32_t a0, a1, a2;
    std::memcpy(&a0, s, 4);
    std::memcpy(&a1, s + 4, 4);
    std::memcpy(&a2, s + 8, 4);
    const uint32_t lo4 = 0x0f0f0f0fu, hi2 = 0x03030303u;
    const __m128i sc8 =
        _mm_sub_epi8(_mm_set_epi32(int(((a1 >> 4) & lo4) | (((a2 >> 6) & hi2) << 4)),
                                   int(((a0 >> 4) & lo4) | (((a2 >> 4) & hi2) << 4)),
                                   int((a1 & lo4) | (((a2 >> 2) & hi2) << 4)), int((a0 & lo4) | ((a2 & hi2) << 4))),
                     _mm_set1_epi8(32));
    return _mm256_cvtepi8_epi16(sc8);
}

// --- Unpacking, one per layout (the element orders are spelled out in kquant_ref.cpp).

LA_AVX2 inline void unpack_q2_K(const uint8_t* b, KUnpacked* u) {
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
        const __m256i v = load32(b + 16 + 32 * h);
        for (int j = 0; j < 4; ++j) store32(u->q + 128 * h + 32 * j, _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3));
    }
    __m256i scales, mins;
    q2_scales_mins(b, &scales, &mins);
    store32(reinterpret_cast<uint8_t*>(u->scale), scales);
    store32(reinterpret_cast<uint8_t*>(u->min), mins);
    u->d = half(b + 80);
    u->dmin = half(b + 82);
}

LA_AVX2 inline void unpack_q3_K(const uint8_t* b, KUnpacked* u) {
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m256i hm = load32(b);
    for (int h = 0; h < 2; ++h) {
        const __m256i v = load32(b + 32 + 32 * h);
        for (int j = 0; j < 4; ++j) {
            const __m256i low = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m3);
            store32(u->q + 128 * h + 32 * j, _mm256_or_si256(low, bit_to(hm, 1 << (4 * h + j), 4)));
        }
    }
    const __m256i sc16 = q3_scales(b + 96);
    store32(reinterpret_cast<uint8_t*>(u->scale), sc16);
    store32(reinterpret_cast<uint8_t*>(u->min), _mm256_slli_epi16(sc16, 2));
    u->d = u->dmin = half(b + 108);
}

LA_AVX2 inline void unpack_q4_K(const uint8_t* b, KUnpacked* u) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int c = 0; c < 4; ++c) {
        const __m256i v = load32(b + 16 + 32 * c);
        store32(u->q + 64 * c, _mm256_and_si256(v, m4));
        store32(u->q + 64 * c + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    }
    k4_scales(b + 4, u);
    u->d = half(b);
    u->dmin = half(b + 2);
}

LA_AVX2 inline void unpack_q5_K(const uint8_t* b, KUnpacked* u) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i qh = load32(b + 16);
    for (int c = 0; c < 4; ++c) {
        const __m256i v = load32(b + 48 + 32 * c);
        store32(u->q + 64 * c, _mm256_or_si256(_mm256_and_si256(v, m4), bit_to(qh, 1 << (2 * c), 16)));
        store32(u->q + 64 * c + 32,
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), bit_to(qh, 2 << (2 * c), 16)));
    }
    k4_scales(b + 4, u);
    u->d = half(b);
    u->dmin = half(b + 2);
}

LA_AVX2 inline void unpack_q6_K(const uint8_t* b, KUnpacked* u) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
        const __m256i l0 = load32(b + 64 * h), l1 = load32(b + 64 * h + 32), qh = load32(b + 128 + 32 * h);
        uint8_t* q = u->q + 128 * h;
        // High bits 2k of qh moved to bits 4..5 (epi16 shifts are safe: the mask drops what
        // crossed from the neighbouring byte).
        store32(q, _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)));
        store32(q + 32, _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)));
        store32(q + 64, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m30)));
        store32(q + 96, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                        _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)));
    }
    for (int k = 0; k < 16; ++k) {
        u->scale[k] = int8_t(b[192 + k]);
        u->min[k] = int16_t(32 * u->scale[k]);
    }
    u->d = u->dmin = half(b + 208);
}

#undef LA_AVX2

}  // namespace lazyattn::backend::cpu::simd::kunpack
