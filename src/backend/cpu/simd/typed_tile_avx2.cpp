// AVX2+FMA+F16C prefill tiles (typed_dot.h's TypedTile) for every weight type but fp32: the
// K-quants, the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and F16/BF16. The GEMM
// path of CPUs without AVX-512, and of Q5_0/Q5_1 on every CPU.
//
// A tile of 16 weight rows is unpacked once into lanes = rows (typed_tile_pack.h) and every
// activation row of the task streams past it: a 16-row vector is read as two 8-row halves, the
// activation's 4 bytes of a k-quad are broadcast to every lane, and maddubs + madd(1) stand in for
// the vpdpbusd that AVX2 lacks (u8 weights of at most 63 times s8 activations: no int16
// saturation; Q8_0's signed weights go in as |w| against x with w's sign). Per-16 (K-quants) or
// per-32 groups are summed exactly in int32 and scaled in
// fp32, so results equal the reference's integer sums, with only the float order different. Up
// to three activation rows share each weight load (6 int32 sums + 6 float accumulators in
// registers); the unpacking is paid once per tile instead of once per four rows as in the row
// dots (typed_dot_avx2.cpp).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/simd/typed_dot.h"
#include "backend/cpu/simd/typed_tile_avx2.h"
#include "backend/cpu/simd/typed_tile_pack.h"

namespace lazyattn::backend::cpu::simd {
namespace {

using namespace tilepack;

#define LA_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr size_t kQ8KBytes = sizeof(kernels::BlockQ8_K), kQ8KQs = 4, kQ8KSums = 260;

LA_AVX2 inline __m256i load_si(const uint8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
LA_AVX2 inline int32_t quad_at(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
LA_AVX2 inline float float_at(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
}
// u8 x s8 products of 4 consecutive bytes, summed into one int32 per lane (vpdpbusd's work).
LA_AVX2 inline __m256i dot4(__m256i w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}
// y[o] for the 16 lanes (two halves) with bias, only the first num_w_rows columns written.
LA_AVX2 inline void store_row(float* y, __m256 lo, __m256 hi, int num_w_rows, const float* bias) {
    alignas(32) float out[16];
    _mm256_store_ps(out, lo);
    _mm256_store_ps(out + 8, hi);
    for (int o = 0; o < num_w_rows; ++o) y[o] = out[o] + (bias != nullptr ? bias[o] : 0.0f);
}

// Runs Rows<R>(first row) over rows in groups of 3, then the rest one by one.
template <typename Fn3, typename Fn1>
LA_AVX2 inline void by_three(int64_t rows, Fn3 three, Fn1 one) {
    int64_t r = 0;
    for (; r + 3 <= rows; r += 3) three(r);
    for (; r < rows; ++r) one(r);
}

// --- K-quants, Q8_K activations.

template <int R>
LA_AVX2 void kquant_rows(const uint8_t* packed, int64_t nsb, const uint8_t* x, size_t stride, float* y,
                         int64_t y_stride, int num_w_rows, const float* bias) {
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; ++i) {
        const uint8_t* t = packed + i * kKTileBytes;
        const uint8_t* xb[R];
        for (int r = 0; r < R; ++r) xb[r] = x + r * stride + i * kQ8KBytes;
        __m256 fa[R][2];
        for (int r = 0; r < R; ++r) fa[r][0] = fa[r][1] = _mm256_setzero_ps();
        for (int g = 0; g < 16; ++g) {
            __m256i si[R][2];
            for (int r = 0; r < R; ++r) si[r][0] = si[r][1] = _mm256_setzero_si256();
            for (int k = 0; k < 4; ++k) {
                const uint8_t* wq = t + kKTileQ + 64 * (4 * g + k);
                const __m256i w0 = load_si(wq), w1 = load_si(wq + 32);
                for (int r = 0; r < R; ++r) {
                    const __m256i xv = _mm256_set1_epi32(quad_at(xb[r] + kQ8KQs + 16 * g + 4 * k));
                    si[r][0] = _mm256_add_epi32(si[r][0], dot4(w0, xv));
                    si[r][1] = _mm256_add_epi32(si[r][1], dot4(w1, xv));
                }
            }
            const float* fs = reinterpret_cast<const float*>(t + kKTileFs) + 16 * g;
            const __m256 fs0 = _mm256_load_ps(fs), fs1 = _mm256_load_ps(fs + 8);
            for (int r = 0; r < R; ++r) {
                fa[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si[r][0]), fs0, fa[r][0]);
                fa[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si[r][1]), fs1, fa[r][1]);
            }
        }
        __m256i mi[R][2];
        for (int r = 0; r < R; ++r) mi[r][0] = mi[r][1] = _mm256_setzero_si256();
        for (int p = 0; p < 8; ++p) {
            const __m256i m0 = load_si(t + kKTileMn + 64 * p), m1 = load_si(t + kKTileMn + 64 * p + 32);
            for (int r = 0; r < R; ++r) {
                const __m256i sums = _mm256_set1_epi32(quad_at(xb[r] + kQ8KSums + 4 * p));
                mi[r][0] = _mm256_add_epi32(mi[r][0], _mm256_madd_epi16(m0, sums));
                mi[r][1] = _mm256_add_epi32(mi[r][1], _mm256_madd_epi16(m1, sums));
            }
        }
        const float* dm = reinterpret_cast<const float*>(t + kKTileDm);
        const __m256 dm0 = _mm256_load_ps(dm), dm1 = _mm256_load_ps(dm + 8);
        for (int r = 0; r < R; ++r) {
            const __m256 dx = _mm256_set1_ps(float_at(xb[r]));
            acc[r][0] = _mm256_fmadd_ps(fa[r][0], dx, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(fa[r][1], dx, acc[r][1]);
            acc[r][0] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mi[r][0]), _mm256_mul_ps(dm0, dx), acc[r][0]);
            acc[r][1] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mi[r][1]), _mm256_mul_ps(dm1, dx), acc[r][1]);
        }
    }
    for (int r = 0; r < R; ++r) store_row(y + r * y_stride, acc[r][0], acc[r][1], num_w_rows, bias);
}

LA_AVX2 void kquant_tile(const uint8_t* packed, int64_t n, const uint8_t* x, size_t stride, int64_t rows, float* y,
                         int64_t y_stride, int num_w_rows, const float* bias) {
    const int64_t nsb = n / kernels::kSuperBlock;
    by_three(
        rows,
        [&](int64_t r) {
            kquant_rows<3>(packed, nsb, x + r * stride, stride, y + r * y_stride, y_stride, num_w_rows, bias);
        },
        [&](int64_t r) {
            kquant_rows<1>(packed, nsb, x + r * stride, stride, y + r * y_stride, y_stride, num_w_rows, bias);
        });
}

// --- The 32-element block types: Q4_0, Q5_0, Q8_0 (Q8_0 activations), Q4_1, Q5_1 (Q8_1).

template <GgmlType kType, int R>
LA_AVX2 void block32_rows(const uint8_t* packed, int64_t nb, const uint8_t* x, size_t stride, float* y,
                          int64_t y_stride, int num_w_rows, const float* bias) {
    constexpr bool kMin = kType == GgmlType::kQ4_1 || kType == GgmlType::kQ5_1;
    constexpr bool kSigned = kType == GgmlType::kQ8_0;
    constexpr int kOffset = kType == GgmlType::kQ4_0 ? 8 : kType == GgmlType::kQ5_0 ? 16 : 0;
    // Activation block: Q8_0 {half d; s8 qs[32]} or Q8_1 {half d; half s = d * sum(qs); s8 qs[32]}.
    constexpr size_t kXBytes = kMin ? sizeof(kernels::BlockQ8_1) : sizeof(kernels::BlockQ8_0);
    constexpr size_t kXQs = kMin ? 4 : 2;
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* t = packed + b * kB32TileBytes;
        const uint8_t* xb[R];
        for (int r = 0; r < R; ++r) xb[r] = x + r * stride + b * kXBytes;
        __m256i si[R][2];
        for (int r = 0; r < R; ++r) si[r][0] = si[r][1] = _mm256_setzero_si256();
        for (int k = 0; k < 8; ++k) {
            __m256i w0 = load_si(t + kB32TileQ + 64 * k), w1 = load_si(t + kB32TileQ + 64 * k + 32);
            // Signed weights: |w| times x with w's sign (maddubs takes its first operand unsigned).
            const __m256i s0 = w0, s1 = w1;
            if constexpr (kSigned) w0 = _mm256_abs_epi8(w0), w1 = _mm256_abs_epi8(w1);
            for (int r = 0; r < R; ++r) {
                const __m256i xv = _mm256_set1_epi32(quad_at(xb[r] + kXQs + 4 * k));
                if constexpr (kSigned) {
                    si[r][0] = _mm256_add_epi32(si[r][0], dot4(w0, _mm256_sign_epi8(xv, s0)));
                    si[r][1] = _mm256_add_epi32(si[r][1], dot4(w1, _mm256_sign_epi8(xv, s1)));
                } else {
                    si[r][0] = _mm256_add_epi32(si[r][0], dot4(w0, xv));
                    si[r][1] = _mm256_add_epi32(si[r][1], dot4(w1, xv));
                }
            }
        }
        const float* d = reinterpret_cast<const float*>(t + kB32TileD);
        const __m256 d0 = _mm256_load_ps(d), d1 = _mm256_load_ps(d + 8);
        for (int r = 0; r < R; ++r) {
            const __m256 dx = _mm256_set1_ps(kunpack::half(xb[r]));
            if constexpr (kOffset != 0) {
                // q - offset with the offset taken out once per block: sum(q * xq) - offset * sum(xq).
                const __m256i xq = kunpack::load32(xb[r] + kXQs);
                const __m256i so =
                    _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), xq), _mm256_set1_epi16(kOffset));
                __m128i h = _mm_add_epi32(_mm256_castsi256_si128(so), _mm256_extracti128_si256(so, 1));
                h = _mm_add_epi32(h, _mm_unpackhi_epi64(h, h));
                h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 1));
                const __m256i off = _mm256_broadcastd_epi32(h);
                si[r][0] = _mm256_sub_epi32(si[r][0], off);
                si[r][1] = _mm256_sub_epi32(si[r][1], off);
            }
            acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si[r][0]), _mm256_mul_ps(d0, dx), acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si[r][1]), _mm256_mul_ps(d1, dx), acc[r][1]);
            if constexpr (kMin) {
                // + m * sum(x) = m * (dx * sum(xq)), the second factor stored as s.
                const float* m = reinterpret_cast<const float*>(t + kB32TileM);
                const __m256 sx = _mm256_set1_ps(kunpack::half(xb[r] + 2));
                acc[r][0] = _mm256_fmadd_ps(_mm256_load_ps(m), sx, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(_mm256_load_ps(m + 8), sx, acc[r][1]);
            }
        }
    }
    for (int r = 0; r < R; ++r) store_row(y + r * y_stride, acc[r][0], acc[r][1], num_w_rows, bias);
}

template <GgmlType kType>
LA_AVX2 void block32_tile(const uint8_t* packed, int64_t n, const uint8_t* x, size_t stride, int64_t rows, float* y,
                          int64_t y_stride, int num_w_rows, const float* bias) {
    by_three(
        rows,
        [&](int64_t r) {
            block32_rows<kType, 3>(packed, n / 32, x + r * stride, stride, y + r * y_stride, y_stride, num_w_rows,
                                   bias);
        },
        [&](int64_t r) {
            block32_rows<kType, 1>(packed, n / 32, x + r * stride, stride, y + r * y_stride, y_stride, num_w_rows,
                                   bias);
        });
}

// --- F16/BF16, fp32 activations: per k, 16 widened weights against a broadcast activation.

template <int R>
LA_AVX2 void ftile_rows(const float* t, int64_t n, const uint8_t* x, size_t stride, float* y, int64_t y_stride,
                        int num_w_rows, const float* bias) {
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    const float* xr[R];
    for (int r = 0; r < R; ++r) xr[r] = reinterpret_cast<const float*>(x + r * stride);
    for (int64_t k = 0; k < n; ++k) {
        const __m256 w0 = _mm256_load_ps(t + 16 * k), w1 = _mm256_load_ps(t + 16 * k + 8);
        for (int r = 0; r < R; ++r) {
            const __m256 xv = _mm256_broadcast_ss(xr[r] + k);
            acc[r][0] = _mm256_fmadd_ps(w0, xv, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(w1, xv, acc[r][1]);
        }
    }
    for (int r = 0; r < R; ++r) store_row(y + r * y_stride, acc[r][0], acc[r][1], num_w_rows, bias);
}

LA_AVX2 void ftile(const uint8_t* packed, int64_t n, const uint8_t* x, size_t stride, int64_t rows, float* y,
                   int64_t y_stride, int num_w_rows, const float* bias) {
    const auto* t = reinterpret_cast<const float*>(packed);
    int64_t r = 0;
    for (; r + 6 <= rows; r += 6)
        ftile_rows<6>(t, n, x + r * stride, stride, y + r * y_stride, y_stride, num_w_rows, bias);
    for (; r < rows; ++r) ftile_rows<1>(t, n, x + r * stride, stride, y + r * y_stride, y_stride, num_w_rows, bias);
}

const TypedTile kTileQ2K = {pack_kquant<kunpack::unpack_q2_K, 84>, kquant_tile, ktile_bytes};
const TypedTile kTileQ3K = {pack_kquant<kunpack::unpack_q3_K, 110>, kquant_tile, ktile_bytes};
const TypedTile kTileQ4K = {pack_kquant<kunpack::unpack_q4_K, 144>, kquant_tile, ktile_bytes};
const TypedTile kTileQ5K = {pack_kquant<kunpack::unpack_q5_K, 176>, kquant_tile, ktile_bytes};
const TypedTile kTileQ6K = {pack_kquant<kunpack::unpack_q6_K, 210>, kquant_tile, ktile_bytes};
const TypedTile kTileQ4_0 = {pack_block32<GgmlType::kQ4_0, 18>, block32_tile<GgmlType::kQ4_0>, b32tile_bytes};
const TypedTile kTileQ4_1 = {pack_block32<GgmlType::kQ4_1, 20>, block32_tile<GgmlType::kQ4_1>, b32tile_bytes};
const TypedTile kTileQ5_0 = {pack_block32<GgmlType::kQ5_0, 22>, block32_tile<GgmlType::kQ5_0>, b32tile_bytes};
const TypedTile kTileQ5_1 = {pack_block32<GgmlType::kQ5_1, 24>, block32_tile<GgmlType::kQ5_1>, b32tile_bytes};
const TypedTile kTileQ8_0 = {pack_block32<GgmlType::kQ8_0, 34>, block32_tile<GgmlType::kQ8_0>, b32tile_bytes};
const TypedTile kTileF16 = {pack_16bit<false>, ftile, ftile_bytes};
const TypedTile kTileBF16 = {pack_16bit<true>, ftile, ftile_bytes};

}  // namespace

const TypedTile* avx2_tile_of(kernels::GgmlType t) {
    using W = kernels::GgmlType;
    switch (t) {
        case W::kQ2_K:
            return &kTileQ2K;
        case W::kQ3_K:
            return &kTileQ3K;
        case W::kQ4_K:
            return &kTileQ4K;
        case W::kQ5_K:
            return &kTileQ5K;
        case W::kQ6_K:
            return &kTileQ6K;
        case W::kQ5_0:
            return &kTileQ5_0;
        case W::kQ5_1:
            return &kTileQ5_1;
        case W::kQ4_0:
            return &kTileQ4_0;
        case W::kQ4_1:
            return &kTileQ4_1;
        case W::kQ8_0:
            return &kTileQ8_0;
        case W::kF16:
            return &kTileF16;
        case W::kBF16:
            return &kTileBF16;
        default:
            return nullptr;
    }
}

const TypedTile* avx2_q5_tile_of(kernels::GgmlType t) {
    return t == kernels::GgmlType::kQ5_0 || t == kernels::GgmlType::kQ5_1 ? avx2_tile_of(t) : nullptr;
}

}  // namespace lazyattn::backend::cpu::simd
