// AVX2+FMA+F16C row dots for Q5_0/Q5_1, the K-quants and F16/BF16 (typed_dot.h): decode (at most
// four activation rows); the prefill tiles are in typed_tile_avx2.cpp. The AVX-512
// VNNI set uses these too: the K-quant inner loop multiplies by a per-16 scale between the byte
// products and the int32 sums, which vpdpbusd cannot fold in.
//
// A K-quant super-block is unpacked with SIMD shifts and masks into the common form of
// kernels/ref/kquant_ref.h (256 unsigned bytes, per-16 scales and mins) in L1, then every
// activation row takes it with maddubs/madd: the weight bytes are decoded once per block for up
// to four rows. The integer sums equal the reference's and the float steps are the same, so
// results are bit-identical to it. F16/BF16 are widened in registers (vcvtph2ps; BF16 is a
// shift) and multiplied in fp32 with FMA; nothing is stored wider than in the file.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/simd/kquant_unpack_avx2.h"
#include "backend/cpu/simd/typed_dot.h"
#include "backend/cpu/simd/typed_dot_k_avx2.h"
#include "backend/cpu/simd/typed_tile_avx2.h"
#include "backend/cpu/simd/typed_tile_pack.h"
#include "core/fp16.h"
#include "kernels/params/quant_blocks.h"
#include "kernels/ref/kquant_ref.h"

namespace lazyattn::backend::cpu::simd {
namespace {

using kernels::BlockQ8_0;
using kernels::BlockQ8_1;
using kernels::BlockQ8_K;
using kernels::ref::KUnpacked;
using namespace kunpack;

#define LA_AVX2 __attribute__((target("avx2,fma,f16c")))

LA_AVX2 inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

LA_AVX2 inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 0xff in byte i where bit i of the 32-bit value is set, else 0.
LA_AVX2 inline __m256i bytes_from_bits(uint32_t bits) {
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), shuf);
    return _mm256_cmpeq_epi8(_mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
}

// acc[r] += the block's term for activation rows r < rows (block i of each row).
LA_AVX2 inline void dot_unpacked_rows(const KUnpacked& u, const uint8_t* x, size_t stride, int64_t i, int rows,
                                      float* acc) {
    __m256i sc[8];
    for (int g = 0; g < 8; ++g)
        sc[g] = _mm256_set_m128i(_mm_set1_epi16(u.scale[2 * g + 1]), _mm_set1_epi16(u.scale[2 * g]));
    const __m256i mins = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.min));
    for (int r = 0; r < rows; ++r) {
        const auto* xb = reinterpret_cast<const BlockQ8_K*>(x + r * stride) + i;
        __m256i s = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g) {
            const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * g));
            const __m256i p = _mm256_maddubs_epi16(q, load32(reinterpret_cast<const uint8_t*>(xb->qs) + 32 * g));
            s = _mm256_add_epi32(s, _mm256_madd_epi16(p, sc[g]));
        }
        const __m256i m = _mm256_madd_epi16(load32(reinterpret_cast<const uint8_t*>(xb->bsums)), mins);
        acc[r] += kernels::ref::combine_kquant(u, xb->d, hsum_i32(s), hsum_i32(m));
    }
}

template <void (*Unpack)(const uint8_t*, KUnpacked*), size_t kBytes>
LA_AVX2 void dot_kquant(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    const auto* wb = static_cast<const uint8_t*>(w);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    KUnpacked u;
    for (int64_t i = 0; i < n / kernels::kSuperBlock; ++i) {
        Unpack(wb + i * kBytes, &u);
        dot_unpacked_rows(u, x, stride, i, rows, acc);
    }
    for (int r = 0; r < rows; ++r) out[r] = acc[r];
}

// --- Q5_0 / Q5_1: 32 five-bit values from 16 nibble bytes and a 32-bit mask of fifth bits.

LA_AVX2 inline __m256i unpack_q5(const uint8_t* qh, const uint8_t* qs) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i low = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0f));
    return _mm256_or_si256(low, _mm256_and_si256(bytes_from_bits(bits), _mm256_set1_epi8(0x10)));
}

// Every row keeps an fp32 vector accumulator across blocks (one convert and FMA per block, the
// horizontal sum once per row). Q5_0's q - 16 is signed: |q - 16| against x with q - 16's sign.
LA_AVX2 void dot_q5_0(const void* wv, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    const auto* w = static_cast<const uint8_t*>(wv);
    __m256 acc[4];
    for (int r = 0; r < 4; ++r) acc[r] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < n / 32; ++i, w += 22) {
        const __m256i q = _mm256_sub_epi8(unpack_q5(w + 2, w + 6), _mm256_set1_epi8(16));
        const __m256i qa = _mm256_sign_epi8(q, q);
        const float dw = half(w);
        for (int r = 0; r < rows; ++r) {
            const auto* xb = reinterpret_cast<const BlockQ8_0*>(x + r * stride) + i;
            const __m256i xv = _mm256_sign_epi8(load32(reinterpret_cast<const uint8_t*>(xb->qs)), q);
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(qa, xv), ones);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * _cvtsh_ss(xb->d)), acc[r]);
        }
    }
    for (int r = 0; r < rows; ++r) out[r] = hsum_ps(acc[r]);
}

LA_AVX2 void dot_q5_1(const void* wv, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    const auto* w = static_cast<const uint8_t*>(wv);
    __m256 acc[4];
    float mins[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int r = 0; r < 4; ++r) acc[r] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < n / 32; ++i, w += 24) {
        const __m256i q = unpack_q5(w + 4, w + 8);
        const float dw = half(w), mw = half(w + 2);
        for (int r = 0; r < rows; ++r) {
            const auto* xb = reinterpret_cast<const BlockQ8_1*>(x + r * stride) + i;
            const __m256i xv = load32(reinterpret_cast<const uint8_t*>(xb->qs));
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), ones);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * _cvtsh_ss(xb->d)), acc[r]);
            mins[r] += mw * _cvtsh_ss(xb->s);
        }
    }
    for (int r = 0; r < rows; ++r) out[r] = hsum_ps(acc[r]) + mins[r];
}

// --- F16 / BF16 against fp32 activations: 16 weights per step, two accumulators per row.

using tilepack::widen8;

template <bool kBf16>
LA_AVX2 void dot_16bit(const void* wv, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    const auto* w = static_cast<const uint8_t*>(wv);
    __m256 a0[4], a1[4];
    for (int r = 0; r < 4; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 w0 = widen8<kBf16>(w + 2 * i), w1 = widen8<kBf16>(w + 2 * i + 16);
        for (int r = 0; r < rows; ++r) {
            const float* xr = reinterpret_cast<const float*>(x + r * stride) + i;
            a0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xr), a0[r]);
            a1[r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xr + 8), a1[r]);
        }
    }
    for (int r = 0; r < rows; ++r) {
        const float* xr = reinterpret_cast<const float*>(x + r * stride);
        float s = hsum_ps(_mm256_add_ps(a0[r], a1[r]));
        for (int64_t j = i; j < n; ++j) {
            uint16_t h;
            std::memcpy(&h, w + 2 * j, 2);
            s += (kBf16 ? bf16_to_fp32(h) : fp16_to_fp32(h)) * xr[j];
        }
        out[r] = s;
    }
}

}  // namespace

const TypedDotKernels kAvx2TypedDots = {
    dot_q5_0,
    dot_q5_1,
    avx2_dot_q2_K,
    avx2_dot_q3_K,
    avx2_dot_q4_K,
    avx2_dot_q5_K,
    dot_kquant<unpack_q6_K, 210>,
    dot_16bit<false>,
    dot_16bit<true>,
    avx2_tile_of,
};

}  // namespace lazyattn::backend::cpu::simd
