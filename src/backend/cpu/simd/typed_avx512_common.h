// Shared pieces of the AVX-512 typed-weight kernels (typed_dot_avx512.cpp: row dots, prefill
// tiles, the Q8_K quantizer; typed_dot_r16_avx512.cpp: K-quants repacked at load): the target
// attribute, the Q8_K activation layout, the K-quant prefill tile layout and small load helpers.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/simd/typed_dot.h"
#include "backend/cpu/simd/typed_tile_pack.h"
#include "kernels/params/quant_blocks.h"
#include "kernels/ref/kquant_ref.h"

namespace lazyattn::backend::cpu::simd::avx512 {

using kernels::BlockQ8_K;
using kernels::ref::KUnpacked;

#define LA_512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

constexpr size_t kQ8KBytes = sizeof(BlockQ8_K);  // 292: float d, 256 int8, 16 int16 block sums
constexpr size_t kQ8KQs = 4, kQ8KSums = 260;
constexpr __mmask32 kUpperWords = 0xffff0000u;  // int16 lanes 16..31 = bytes 32..63

LA_512 inline float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}
LA_512 inline float float_at(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
}
LA_512 inline __m512i load64(const uint8_t* p) { return _mm512_loadu_si512(p); }
LA_512 inline __m256i load32b(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
// 32 bytes in both 256-bit halves.
LA_512 inline __m512i bcast32(const uint8_t* p) { return _mm512_broadcast_i64x4(load32b(p)); }
LA_512 inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
// Index vector for vpermw: int16 lanes [8j, 8j + 8) take word base + j (j = 0..3).
LA_512 inline __m512i per_quarter(int base) {
    constexpr int64_t kOnes = 0x0001000100010001LL;
    const int64_t b0 = base * kOnes, b1 = (base + 1) * kOnes, b2 = (base + 2) * kOnes, b3 = (base + 3) * kOnes;
    return _mm512_set_epi64(b3, b3, b2, b2, b1, b1, b0, b0);
}
// Index vector for vpermw: int16 lanes [0, 16) take word a, [16, 32) take word b.
LA_512 inline __m512i per_half(int a, int b) {
    const __m256i lo = _mm256_set1_epi16(short(a)), hi = _mm256_set1_epi16(short(b));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// The K-quant prefill tile layout (typed_tile_pack.h).
using tilepack::kKTileBytes;
using tilepack::kKTileDm;
using tilepack::kKTileFs;
using tilepack::kKTileMn;
using tilepack::kKTileQ;

// The repacked K-quant kernels (typed_dot_r16_avx512.cpp) for Q4_K, Q5_K, Q6_K; nullptr otherwise.
const TypedR16* r16_of(kernels::GgmlType t);

}  // namespace lazyattn::backend::cpu::simd::avx512
