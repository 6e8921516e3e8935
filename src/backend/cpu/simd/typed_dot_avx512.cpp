// AVX-512 (F/BW/VL/VNNI) kernels for the typed weights (typed_dot.h).
//
// Decode (row dots, 1-4 activation rows): Q4_K, Q5_K and Q6_K are decoded straight from the GGUF
// bytes into 512-bit registers (64 weights each: a 32-byte load broadcast to both halves, one
// masked shift selects the low or high nibbles per half), multiplied with maddubs and summed with
// the per-group scale by one vpdpwssd; each activation row keeps a float accumulator vector across
// super-blocks (one convert and one FMA per super-block, the horizontal sum once per row). The
// mins (Q4_K/Q5_K) go through the Q8_K block sums with one madd per super-block; Q6_K's offset
// of 32 shares the scale d and is folded into the integer sum. Q2_K/Q3_K are unpacked into the
// common form (kquant_unpack_avx2.h) and then take the same vector path. F16/BF16 are widened in
// registers (vcvtph2ps / shift) into FMAs. Q5_0/Q5_1 use the AVX2 kernels (row dots and tiles).
//
// Prefill (typed_dot.h's TypedTile): a tile of 16 weight rows is unpacked once into lanes = rows:
//  * K-quants: per super-block 64 vectors of u8 (4 consecutive k per row per lane, vpdpbusd
//    against a broadcast of 4 activation bytes), 16 vectors of fp32 d * scale (one per group of
//    16), 8 vectors of int16 min pairs (vpdpwssd against a broadcast pair of block sums) and the
//    16 dmin. All five K-quant layouts share this one kernel through the common form.
//  * F16/BF16: widened to fp32, one 64-byte vector of 16 rows per k, FMA against a broadcast
//    activation.
// Integer sums are exact; only the float accumulation order differs from the reference.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/simd/kquant_unpack_avx2.h"
#include "backend/cpu/simd/typed_avx512_common.h"
#include "backend/cpu/simd/typed_dot.h"
#include "backend/cpu/simd/typed_tile_avx2.h"
#include "core/fp16.h"
#include "kernels/params/quant_blocks.h"
#include "kernels/ref/kquant_ref.h"

namespace lazyattn::backend::cpu::simd {
namespace {

using namespace avx512;  // the shared helpers and layouts

// --- Q4_K / Q5_K: 8 groups of 32 with 6-bit scales and mins.

// The 12 packed scale bytes as 8 scales (bytes 0..7) and 8 mins (bytes 8..15).
LA_512 inline __m128i k4_scales_mins(const uint8_t* s) {
    uint32_t u[4];
    std::memcpy(u, s, 12);
    constexpr uint32_t m1 = 0x3f3f3f3f, m2 = 0x0f0f0f0f, m3 = 0x03030303;
    u[3] = ((u[2] >> 4) & m2) | (((u[1] >> 6) & m3) << 4);
    const uint32_t mins_lo = u[1] & m1;
    u[1] = (u[2] & m2) | (((u[0] >> 6) & m3) << 4);
    u[2] = mins_lo;
    u[0] &= m1;
    return _mm_set_epi32(int(u[3]), int(u[2]), int(u[1]), int(u[0]));
}

template <bool kQ5, int R>
LA_512 void dot_q45_K_rows(const uint8_t* w, const uint8_t* x, size_t stride, int64_t nsb, float* out) {
    constexpr size_t kBytes = kQ5 ? 176 : 144;
    constexpr size_t kQs = kQ5 ? 48 : 16;
    const __m512i m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10);
    const __m512i idx0 = per_half(0, 1), idx1 = per_half(2, 3), idx2 = per_half(4, 5), idx3 = per_half(6, 7);
    __m512 acc[R];
    __m256 accm[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps(), accm[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; ++i) {
        const uint8_t* b = w + i * kBytes;
        const float d = half_at(b), dmin = half_at(b + 2);
        const __m128i sm = k4_scales_mins(b + 4);
        const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sm));
        const __m512i scv[4] = {_mm512_permutexvar_epi16(idx0, sc16), _mm512_permutexvar_epi16(idx1, sc16),
                                _mm512_permutexvar_epi16(idx2, sc16), _mm512_permutexvar_epi16(idx3, sc16)};
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));  // m0 m0 m1 m1 ... per 16
        // Chunk c: 32 bytes, low nibbles = group 2c, high nibbles = group 2c + 1 (x[64c, 64c + 64)).
        __m512i q[4];
        const __m512i qh = kQ5 ? bcast32(b + 16) : _mm512_setzero_si512();
        for (int c = 0; c < 4; ++c) {
            __m512i v = bcast32(b + kQs + 32 * c);
            v = _mm512_and_si512(_mm512_mask_srli_epi16(v, kUpperWords, v, 4), m4);
            if (kQ5) {
                // Bit 2c of qh (low half) or 2c + 1 (high half) moved to bit 4.
                __m512i h = c == 0   ? _mm512_slli_epi16(qh, 4)
                            : c == 1 ? _mm512_slli_epi16(qh, 2)
                            : c == 2 ? qh
                                     : _mm512_srli_epi16(qh, 2);
                h = _mm512_mask_srli_epi16(h, kUpperWords, h, 1);
                v = _mm512_ternarylogic_epi32(v, h, m10, 0xf8);  // v | (h & 0x10)
            }
            q[c] = v;
        }
        for (int r = 0; r < R; ++r) {
            const uint8_t* xb = x + r * stride + i * kQ8KBytes;
            const float dx = float_at(xb);
            __m512i s =
                _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(q[0], load64(xb + kQ8KQs)), scv[0]);
            s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(q[1], load64(xb + kQ8KQs + 64)), scv[1]);
            s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(q[2], load64(xb + kQ8KQs + 128)), scv[2]);
            s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(q[3], load64(xb + kQ8KQs + 192)), scv[3]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(d * dx), acc[r]);
            const __m256i ms = _mm256_madd_epi16(load32b(xb + kQ8KSums), mins);
            accm[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_set1_ps(-dmin * dx), accm[r]);
        }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]) + hsum256(accm[r]);
}

// --- Q6_K: 16 groups of 16, signed 8-bit scales, q - 32 with the 32 folded into the sum.

template <int R>
LA_512 void dot_q6_K_rows(const uint8_t* w, const uint8_t* x, size_t stride, int64_t nsb, float* out) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    const __m512i idx[4] = {per_quarter(0), per_quarter(4), per_quarter(8), per_quarter(12)};
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nsb; ++i) {
        const uint8_t* b = w + i * 210;
        const float d = half_at(b + 208);
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)));
        const __m512i sc16 = _mm512_castsi256_si512(sc);
        __m512i scv[4];
        for (int j = 0; j < 4; ++j) scv[j] = _mm512_permutexvar_epi16(idx[j], sc16);
        const __m512i neg32 =
            _mm512_zextsi256_si512(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 5)));
        __m512i q[4];
        for (int h = 0; h < 2; ++h) {
            const __m512i l = load64(b + 64 * h), hb = bcast32(b + 128 + 32 * h);
            // Elements 128h + [0, 64): low nibbles; high bits (qh << 4) & 0x30 | (qh << 2) & 0x30.
            __m512i ha = _mm512_slli_epi16(hb, 4);
            ha = _mm512_mask_srli_epi16(ha, kUpperWords, ha, 2);
            q[2 * h] = _mm512_ternarylogic_epi32(_mm512_and_si512(l, m4), ha, m30, 0xf8);
            // Elements 128h + [64, 128): high nibbles; high bits qh & 0x30 | (qh >> 2) & 0x30.
            const __m512i hh = _mm512_mask_srli_epi16(hb, kUpperWords, hb, 2);
            q[2 * h + 1] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), hh, m30, 0xf8);
        }
        for (int r = 0; r < R; ++r) {
            const uint8_t* xb = x + r * stride + i * kQ8KBytes;
            __m512i s =
                _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(load32b(xb + kQ8KSums)), neg32);
            for (int j = 0; j < 4; ++j)
                s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(q[j], load64(xb + kQ8KQs + 64 * j)), scv[j]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(d * float_at(xb)), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
}

// --- Q2_K / Q3_K (and any K-quant): through the common form.

template <void (*Unpack)(const uint8_t*, KUnpacked*), size_t kBytes, int R>
LA_512 void dot_kunpacked_rows(const uint8_t* w, const uint8_t* x, size_t stride, int64_t nsb, float* out) {
    const __m512i idx[4] = {per_quarter(0), per_quarter(4), per_quarter(8), per_quarter(12)};
    __m512 acc[R];
    __m256 accm[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps(), accm[r] = _mm256_setzero_ps();
    KUnpacked u;
    for (int64_t i = 0; i < nsb; ++i) {
        Unpack(w + i * kBytes, &u);
        const __m512i sc16 = _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(u.scale)));
        __m512i scv[4];
        for (int j = 0; j < 4; ++j) scv[j] = _mm512_permutexvar_epi16(idx[j], sc16);
        const __m256i mins = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.min));
        for (int r = 0; r < R; ++r) {
            const uint8_t* xb = x + r * stride + i * kQ8KBytes;
            const float dx = float_at(xb);
            __m512i s = _mm512_setzero_si512();
            for (int j = 0; j < 4; ++j) {
                s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(load64(u.q + 64 * j), load64(xb + kQ8KQs + 64 * j)),
                                        scv[j]);
            }
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(u.d * dx), acc[r]);
            const __m256i ms = _mm256_madd_epi16(load32b(xb + kQ8KSums), mins);
            accm[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_set1_ps(-u.dmin * dx), accm[r]);
        }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]) + hsum256(accm[r]);
}

// --- F16 / BF16 with fp32 activations.

template <bool kBf16>
LA_512 inline __m512 widen16(const uint8_t* p) {
    const __m256i h = load32b(p);
    if (kBf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

template <bool kBf16, int R>
LA_512 void dot_16bit_rows(const uint8_t* w, const uint8_t* x, size_t stride, int64_t n, float* out) {
    __m512 a0[R], a1[R];
    for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        // Rows lie back to back: 8 KiB ahead reaches into the next rows, as the repacked K-quants
        // do (decode of a matrix larger than L2 is bound by how early its bytes are asked for).
        _mm_prefetch(reinterpret_cast<const char*>(w + 2 * i + 8192), _MM_HINT_T0);
        const __m512 w0 = widen16<kBf16>(w + 2 * i), w1 = widen16<kBf16>(w + 2 * i + 32);
        for (int r = 0; r < R; ++r) {
            const float* xr = reinterpret_cast<const float*>(x + r * stride) + i;
            a0[r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xr), a0[r]);
            a1[r] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xr + 16), a1[r]);
        }
    }
    for (int r = 0; r < R; ++r) {
        const float* xr = reinterpret_cast<const float*>(x + r * stride);
        float s = _mm512_reduce_add_ps(_mm512_add_ps(a0[r], a1[r]));
        for (int64_t j = i; j < n; ++j) {
            uint16_t h;
            std::memcpy(&h, w + 2 * j, 2);
            s += (kBf16 ? bf16_to_fp32(h) : fp16_to_fp32(h)) * xr[j];
        }
        out[r] = s;
    }
}

// Row-count dispatch: Kernel<R>(w, x, stride, len, out) with len = super-blocks or elements.
template <template <int> class K, bool kSuperBlocks>
LA_512 void by_rows(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    const auto* wb = static_cast<const uint8_t*>(w);
    const int64_t len = kSuperBlocks ? n / kernels::kSuperBlock : n;
    switch (rows) {
        case 1:
            K<1>::run(wb, x, stride, len, out);
            return;
        case 2:
            K<2>::run(wb, x, stride, len, out);
            return;
        case 3:
            K<3>::run(wb, x, stride, len, out);
            return;
        default:
            K<4>::run(wb, x, stride, len, out);
            return;
    }
}
template <int R>
struct Q4K {
    LA_512 static void run(const uint8_t* w, const uint8_t* x, size_t s, int64_t n, float* o) {
        dot_q45_K_rows<false, R>(w, x, s, n, o);
    }
};
template <int R>
struct Q5K {
    LA_512 static void run(const uint8_t* w, const uint8_t* x, size_t s, int64_t n, float* o) {
        dot_q45_K_rows<true, R>(w, x, s, n, o);
    }
};
template <int R>
struct Q6K {
    LA_512 static void run(const uint8_t* w, const uint8_t* x, size_t s, int64_t n, float* o) {
        dot_q6_K_rows<R>(w, x, s, n, o);
    }
};
template <int R>
struct Q2K {
    LA_512 static void run(const uint8_t* w, const uint8_t* x, size_t s, int64_t n, float* o) {
        dot_kunpacked_rows<kunpack::unpack_q2_K, 84, R>(w, x, s, n, o);
    }
};
template <int R>
struct Q3K {
    LA_512 static void run(const uint8_t* w, const uint8_t* x, size_t s, int64_t n, float* o) {
        dot_kunpacked_rows<kunpack::unpack_q3_K, 110, R>(w, x, s, n, o);
    }
};
template <int R>
struct F16 {
    LA_512 static void run(const uint8_t* w, const uint8_t* x, size_t s, int64_t n, float* o) {
        dot_16bit_rows<false, R>(w, x, s, n, o);
    }
};
template <int R>
struct BF16 {
    LA_512 static void run(const uint8_t* w, const uint8_t* x, size_t s, int64_t n, float* o) {
        dot_16bit_rows<true, R>(w, x, s, n, o);
    }
};

void q5_0_avx2(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    kAvx2TypedDots.q5_0(w, x, stride, rows, n, out);
}
void q5_1_avx2(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    kAvx2TypedDots.q5_1(w, x, stride, rows, n, out);
}

// --- Prefill tiles.

using tilepack::ktile_bytes;
using tilepack::pack_kquant;

template <int R>
LA_512 void kquant_tile_rows(const uint8_t* packed, int64_t nsb, const uint8_t* x, size_t stride, float* y,
                             int64_t y_stride, __mmask16 mask, const float* bias) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nsb; ++i) {
        const uint8_t* t = packed + i * kKTileBytes;
        const uint8_t* xb[R];
        for (int r = 0; r < R; ++r) xb[r] = x + r * stride + i * kQ8KBytes;
        __m512 fa[R];
        for (int r = 0; r < R; ++r) fa[r] = _mm512_setzero_ps();
        for (int g = 0; g < 16; ++g) {
            __m512i si[R];
            for (int r = 0; r < R; ++r) si[r] = _mm512_setzero_si512();
            for (int k = 0; k < 4; ++k) {
                const __m512i wv = _mm512_load_si512(t + kKTileQ + 64 * (4 * g + k));
                for (int r = 0; r < R; ++r) {
                    int32_t xv;
                    std::memcpy(&xv, xb[r] + kQ8KQs + 16 * g + 4 * k, 4);
                    si[r] = _mm512_dpbusd_epi32(si[r], wv, _mm512_set1_epi32(xv));
                }
            }
            const __m512 fs = _mm512_load_ps(t + kKTileFs + 64 * g);
            for (int r = 0; r < R; ++r) fa[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(si[r]), fs, fa[r]);
        }
        __m512i mi[R];
        for (int r = 0; r < R; ++r) mi[r] = _mm512_setzero_si512();
        for (int p = 0; p < 8; ++p) {
            const __m512i mv = _mm512_load_si512(t + kKTileMn + 64 * p);
            for (int r = 0; r < R; ++r) {
                int32_t sums;
                std::memcpy(&sums, xb[r] + kQ8KSums + 4 * p, 4);
                mi[r] = _mm512_dpwssd_epi32(mi[r], mv, _mm512_set1_epi32(sums));
            }
        }
        const __m512 dm = _mm512_load_ps(t + kKTileDm);
        for (int r = 0; r < R; ++r) {
            const float dx = float_at(xb[r]);
            acc[r] = _mm512_fmadd_ps(fa[r], _mm512_set1_ps(dx), acc[r]);
            acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mi[r]), _mm512_mul_ps(dm, _mm512_set1_ps(dx)), acc[r]);
        }
    }
    const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * y_stride, mask, _mm512_add_ps(acc[r], b));
}

LA_512 void kquant_tile(const uint8_t* packed, int64_t n, const uint8_t* x, size_t stride, int64_t rows, float* y,
                        int64_t y_stride, int num_w_rows, const float* bias) {
    const int64_t nsb = n / kernels::kSuperBlock;
    const __mmask16 mask = __mmask16((1u << num_w_rows) - 1);
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4)
        kquant_tile_rows<4>(packed, nsb, x + r * stride, stride, y + r * y_stride, y_stride, mask, bias);
    for (; r < rows; ++r)
        kquant_tile_rows<1>(packed, nsb, x + r * stride, stride, y + r * y_stride, y_stride, mask, bias);
}

// F16/BF16 tile: [n][16 rows] fp32 (typed_tile_pack.h).
using tilepack::ftile_bytes;
using tilepack::pack_16bit;

template <int R>
LA_512 void ftile_rows(const float* t, int64_t n, const uint8_t* x, size_t stride, float* y, int64_t y_stride,
                       __mmask16 mask, const float* bias) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    const float* xr[R];
    for (int r = 0; r < R; ++r) xr[r] = reinterpret_cast<const float*>(x + r * stride);
    for (int64_t k = 0; k < n; ++k) {
        const __m512 wv = _mm512_load_ps(t + 16 * k);
        for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(wv, _mm512_set1_ps(xr[r][k]), acc[r]);
    }
    const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * y_stride, mask, _mm512_add_ps(acc[r], b));
}

LA_512 void ftile(const uint8_t* packed, int64_t n, const uint8_t* x, size_t stride, int64_t rows, float* y,
                  int64_t y_stride, int num_w_rows, const float* bias) {
    const auto* t = reinterpret_cast<const float*>(packed);
    const __mmask16 mask = __mmask16((1u << num_w_rows) - 1);
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8) ftile_rows<8>(t, n, x + r * stride, stride, y + r * y_stride, y_stride, mask, bias);
    for (; r < rows; ++r) ftile_rows<1>(t, n, x + r * stride, stride, y + r * y_stride, y_stride, mask, bias);
}

// --- Q8_K activations, bit-identical to kernels::ref::quantize_row_q8_K: the first element of
// largest magnitude maps to -127, q = min(127, round-half-even(x * (-127 / max))).

LA_512 void quantize_q8_K(const float* x, void* yv, int64_t n) {
    auto* y = static_cast<uint8_t*>(yv);
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    for (int64_t b = 0; b < n / kernels::kSuperBlock; ++b, x += kernels::kSuperBlock, y += kQ8KBytes) {
        __m512 m = _mm512_setzero_ps();
        for (int j = 0; j < 256; j += 16) m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(x + j), abs_mask));
        const float amax = _mm512_reduce_max_ps(m);
        if (amax == 0.0f) {
            std::memset(y, 0, kQ8KBytes);
            continue;
        }
        float max = 0.0f;
        const __m512 va = _mm512_set1_ps(amax);
        for (int j = 0; j < 256; j += 16) {
            const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(x + j), abs_mask), va, _CMP_EQ_OQ);
            if (hit != 0) {
                max = x[j + __builtin_ctz(hit)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m512 vs = _mm512_set1_ps(iscale);
        const __m512i hi = _mm512_set1_epi32(127);
        int16_t sums[16];
        for (int k = 0; k < 16; ++k) {
            // round-half-even under the default MXCSR mode, as nearbyint
            __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(vs, _mm512_loadu_ps(x + 16 * k)));
            q = _mm512_min_epi32(q, hi);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(y + kQ8KQs + 16 * k), _mm512_cvtsepi32_epi8(q));
            sums[k] = int16_t(_mm512_reduce_add_epi32(q));
        }
        std::memcpy(y + kQ8KSums, sums, sizeof sums);
        const float d = 1.0f / iscale;
        std::memcpy(y, &d, 4);
    }
}

const TypedTile kTileQ2K = {pack_kquant<kunpack::unpack_q2_K, 84>, kquant_tile, ktile_bytes};
const TypedTile kTileQ3K = {pack_kquant<kunpack::unpack_q3_K, 110>, kquant_tile, ktile_bytes};
const TypedTile kTileQ4K = {pack_kquant<kunpack::unpack_q4_K, 144>, kquant_tile, ktile_bytes};
const TypedTile kTileQ5K = {pack_kquant<kunpack::unpack_q5_K, 176>, kquant_tile, ktile_bytes};
const TypedTile kTileQ6K = {pack_kquant<kunpack::unpack_q6_K, 210>, kquant_tile, ktile_bytes};
const TypedTile kTileF16 = {pack_16bit<false>, ftile, ftile_bytes};
const TypedTile kTileBF16 = {pack_16bit<true>, ftile, ftile_bytes};

const TypedTile* tile_of(kernels::GgmlType t) {
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
        case W::kF16:
            return &kTileF16;
        case W::kBF16:
            return &kTileBF16;
        default:
            return avx2_q5_tile_of(t);
    }
}

}  // namespace

const TypedDotKernels kAvx512TypedDots = {
    q5_0_avx2,          q5_1_avx2,          by_rows<Q2K, true>,  by_rows<Q3K, true>,   by_rows<Q4K, true>,
    by_rows<Q5K, true>, by_rows<Q6K, true>, by_rows<F16, false>, by_rows<BF16, false>, tile_of,
    quantize_q8_K,      avx512::r16_of,
};

}  // namespace lazyattn::backend::cpu::simd
