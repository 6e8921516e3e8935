// AVX-512 VNNI kernels for K-quants repacked at load (kernels/ref/kquant_r16_ref.h): decode
// GEMV over groups of 16 rows and the prefill tile unpacked from the repacked form.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/simd/typed_avx512_common.h"
#include "kernels/ref/kquant_r16_ref.h"

namespace lazyattn::backend::cpu::simd::avx512 {
namespace {

// --- K-quants repacked at load (kernels/ref/kquant_r16_ref.h): groups of 16 rows, lanes = rows.
//
// Decode: one vpdpbusd multiplies 4 consecutive weights of all 16 rows (u8, unpacked from the
// 4-bit words with one and / shift+and) with a broadcast 4-byte activation word; per group of
// 32 (Q4_K/Q5_K) or 16 (Q6_K) elements the int32 sums are converted once and multiplied by the
// row's scale (a byte widened to float), per super-block by d * dx. Q4_K/Q5_K mins: one vpdpwssd
// per pair of groups against the activation's sums per 32 (from the Q8_K sums per 16); Q6_K's
// offset of 32 starts each group's integer sum at -32 * (the activation's sum over the group).
// Nothing is unpacked per row, so a super-block of 16 rows costs about a fifth of the row dots'
// instructions per weight byte.

constexpr size_t kR16Q45Tail = 64, kR16Q6Main = 3328, kR16Q6Tail = 32, kR16Q6Qh = 2048, kR16Q6Sc = 3072;
template <bool kQ5>
constexpr size_t kR16Q45Main = kQ5 ? 2816 : 2304;
template <bool kQ5>
constexpr size_t kR16Q45Sc = kQ5 ? 2560 : 2048;

// Software prefetch this far ahead of the super-block being read: the hardware prefetcher alone
// left the 215 MB Q6_K LM head of the 1B model at 1.44x Q4_0's time per byte (0.93x with it; any
// distance from 4 to 16 KiB measured alike). The tails (d, dmin) of a group, read once per
// super-block from the group's end, are prefetched when the group starts.
constexpr size_t kR16PrefetchBytes = 8192;
LA_512 inline void prefetch_lines(const uint8_t* p, size_t bytes) {
    for (size_t j = 0; j < bytes; j += 64) _mm_prefetch(reinterpret_cast<const char*>(p + j), _MM_HINT_T0);
}
LA_512 inline __m512i bcast_word(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
LA_512 inline __m512 bytes_to_ps_u(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
LA_512 inline __m512 bytes_to_ps_s(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
LA_512 inline __m512 halves_to_ps(const uint8_t* p) { return _mm512_cvtph_ps(load32b(p)); }

// Q4_K/Q5_K: the 16 rows of group `gd` x R activation rows, all super-blocks; acc[r] = lanes = rows.
template <bool kQ5, int R>
LA_512 void r16_q45_group(const uint8_t* gd, int64_t nsb, const uint8_t* x, size_t stride, __m512 acc[R]) {
    constexpr size_t kMain = kR16Q45Main<kQ5>, kSc = kR16Q45Sc<kQ5>;
    const uint8_t* tails = gd + nsb * kMain;
    prefetch_lines(tails, nsb * kR16Q45Tail);
    const __m512i m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < nsb; ++sb) {
        const uint8_t* m = gd + sb * kMain;
        prefetch_lines(m + kR16PrefetchBytes, kMain);
        const uint8_t* xb[R];
        for (int r = 0; r < R; ++r) xb[r] = x + r * stride + sb * kQ8KBytes;
        __m512 fs[R];
        for (int r = 0; r < R; ++r) fs[r] = _mm512_setzero_ps();
        for (int c = 0; c < 4; ++c) {
            __m512i slo[R], shi[R];
            for (int r = 0; r < R; ++r) slo[r] = shi[r] = _mm512_setzero_si512();
            for (int t = 0; t < 8; ++t) {
                const __m512i w = _mm512_load_si512(m + 64 * (8 * c + t));
                __m512i lo = _mm512_and_si512(w, m4);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
                if constexpr (kQ5) {
                    const __m512i h = _mm512_load_si512(m + 2048 + 64 * t);
                    // Bits 2c and 2c + 1 moved to bit 4.
                    const __m512i hl = c == 0   ? _mm512_slli_epi16(h, 4)
                                       : c == 1 ? _mm512_slli_epi16(h, 2)
                                       : c == 2 ? h
                                                : _mm512_srli_epi16(h, 2);
                    const __m512i hh = _mm512_srli_epi16(hl, 1);
                    lo = _mm512_ternarylogic_epi32(lo, hl, m10, 0xf8);  // lo | (hl & 0x10)
                    hi = _mm512_ternarylogic_epi32(hi, hh, m10, 0xf8);
                }
                for (int r = 0; r < R; ++r) {
                    slo[r] = _mm512_dpbusd_epi32(slo[r], lo, bcast_word(xb[r] + kQ8KQs + 64 * c + 4 * t));
                    shi[r] = _mm512_dpbusd_epi32(shi[r], hi, bcast_word(xb[r] + kQ8KQs + 64 * c + 32 + 4 * t));
                }
            }
            const __m512 sc_lo = bytes_to_ps_u(m + kSc + 16 * (2 * c)),
                         sc_hi = bytes_to_ps_u(m + kSc + 16 * (2 * c + 1));
            for (int r = 0; r < R; ++r) {
                fs[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(slo[r]), sc_lo, fs[r]);
                fs[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(shi[r]), sc_hi, fs[r]);
            }
        }
        __m512i mv[4];
        for (int p = 0; p < 4; ++p) mv[p] = _mm512_cvtepu8_epi16(load32b(m + kSc + 128 + 32 * p));
        const __m512 d = halves_to_ps(tails + sb * kR16Q45Tail), dmin = halves_to_ps(tails + sb * kR16Q45Tail + 32);
        for (int r = 0; r < R; ++r) {
            // The activation's sums per 32 as int16 pairs (groups 2p, 2p + 1): dwords 0, 1, 4, 5.
            alignas(32) int32_t pairs[8];
            const __m256i s32 = _mm256_madd_epi16(load32b(xb[r] + kQ8KSums), _mm256_set1_epi16(1));
            _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), _mm256_packs_epi32(s32, s32));
            __m512i mi = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mv[0], _mm512_set1_epi32(pairs[0]));
            mi = _mm512_dpwssd_epi32(mi, mv[1], _mm512_set1_epi32(pairs[1]));
            mi = _mm512_dpwssd_epi32(mi, mv[2], _mm512_set1_epi32(pairs[4]));
            mi = _mm512_dpwssd_epi32(mi, mv[3], _mm512_set1_epi32(pairs[5]));
            const __m512 dx = _mm512_set1_ps(float_at(xb[r]));
            acc[r] = _mm512_fmadd_ps(fs[r], _mm512_mul_ps(d, dx), acc[r]);
            acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mi), _mm512_mul_ps(dmin, dx), acc[r]);
        }
    }
}

// Q6_K: the same for one group.
template <int R>
LA_512 void r16_q6_group(const uint8_t* gd, int64_t nsb, const uint8_t* x, size_t stride, __m512 acc[R]) {
    const uint8_t* tails = gd + nsb * kR16Q6Main;
    prefetch_lines(tails, nsb * kR16Q6Tail);
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < nsb; ++sb) {
        const uint8_t* m = gd + sb * kR16Q6Main;
        prefetch_lines(m + kR16PrefetchBytes, kR16Q6Main);
        const uint8_t* xb[R];
        for (int r = 0; r < R; ++r) xb[r] = x + r * stride + sb * kQ8KBytes;
        // -32 * (activation sum over group g), the start of group g's integer sum.
        alignas(64) int32_t off[R][16];
        for (int r = 0; r < R; ++r) {
            const __m512i s = _mm512_cvtepi16_epi32(load32b(xb[r] + kQ8KSums));
            _mm512_store_si512(off[r], _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(s, 5)));
        }
        __m512 fs[R];
        for (int r = 0; r < R; ++r) fs[r] = _mm512_setzero_ps();
        for (int h = 0; h < 2; ++h) {
            for (int uh = 0; uh < 2; ++uh) {
                // Words u = 4uh..4uh+3 of half h: element 128h + 32k + 4u + j goes to group 8h + 2k + uh.
                __m512i s[4][R];
                for (int k = 0; k < 4; ++k)
                    for (int r = 0; r < R; ++r) s[k][r] = _mm512_set1_epi32(off[r][8 * h + 2 * k + uh]);
                for (int u = 4 * uh; u < 4 * uh + 4; ++u) {
                    const __m512i a = _mm512_load_si512(m + 64 * (16 * h + u));
                    const __m512i b = _mm512_load_si512(m + 64 * (16 * h + 8 + u));
                    const __m512i hb = _mm512_load_si512(m + kR16Q6Qh + 64 * (8 * h + u));
                    __m512i op[4];
                    op[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(a, m4), _mm512_slli_epi16(hb, 4), m30, 0xf8);
                    op[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(b, m4), _mm512_slli_epi16(hb, 2), m30, 0xf8);
                    op[2] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(a, 4), m4), hb, m30, 0xf8);
                    op[3] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(b, 4), m4),
                                                      _mm512_srli_epi16(hb, 2), m30, 0xf8);
                    for (int k = 0; k < 4; ++k)
                        for (int r = 0; r < R; ++r)
                            s[k][r] = _mm512_dpbusd_epi32(s[k][r], op[k],
                                                          bcast_word(xb[r] + kQ8KQs + 128 * h + 32 * k + 4 * u));
                }
                for (int k = 0; k < 4; ++k) {
                    const __m512 sc = bytes_to_ps_s(m + kR16Q6Sc + 16 * (8 * h + 2 * k + uh));
                    for (int r = 0; r < R; ++r) fs[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[k][r]), sc, fs[r]);
                }
            }
        }
        const __m512 d = halves_to_ps(tails + sb * kR16Q6Tail);
        for (int r = 0; r < R; ++r)
            acc[r] = _mm512_fmadd_ps(fs[r], _mm512_mul_ps(d, _mm512_set1_ps(float_at(xb[r]))), acc[r]);
    }
}

template <kernels::GgmlType T, int R>
LA_512 void r16_gemv_rows(const uint8_t* r16, int64_t n, int64_t g0, int64_t g1, int64_t out_dim, const uint8_t* x,
                          size_t stride, float* y, int64_t ys, const float* bias) {
    const int64_t nsb = n / kernels::kSuperBlock;
    const size_t group_bytes = kernels::ref::kquant_r16_group_bytes(T, n);
    for (int64_t g = g0; g < g1; ++g) {
        __m512 acc[R];
        const uint8_t* gd = r16 + g * group_bytes;
        if constexpr (T == kernels::GgmlType::kQ6_K) {
            r16_q6_group<R>(gd, nsb, x, stride, acc);
        } else {
            r16_q45_group<T == kernels::GgmlType::kQ5_K, R>(gd, nsb, x, stride, acc);
        }
        const int64_t o = g * kernels::ref::kR16KRows;
        const int64_t cnt = std::min<int64_t>(16, out_dim - o);
        const __mmask16 mask = cnt >= 16 ? __mmask16(0xffff) : __mmask16((1u << cnt) - 1);
        const __m512 bv = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + o) : _mm512_setzero_ps();
        for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * ys + o, mask, _mm512_add_ps(acc[r], bv));
    }
}

template <kernels::GgmlType T>
LA_512 void r16_gemv(const uint8_t* r16, int64_t n, int64_t g0, int64_t g1, int64_t out_dim, const uint8_t* x,
                     size_t stride, int rows, float* y, int64_t ys, const float* bias) {
    switch (rows) {
        case 1:
            r16_gemv_rows<T, 1>(r16, n, g0, g1, out_dim, x, stride, y, ys, bias);
            return;
        case 2:
            r16_gemv_rows<T, 2>(r16, n, g0, g1, out_dim, x, stride, y, ys, bias);
            return;
        case 3:
            r16_gemv_rows<T, 3>(r16, n, g0, g1, out_dim, x, stride, y, ys, bias);
            return;
        default:
            r16_gemv_rows<T, 4>(r16, n, g0, g1, out_dim, x, stride, y, ys, bias);
            return;
    }
}

// Group g of a repacked matrix into the prefill tile layout (pack_kquant's): the quads are
// unpacked to u8 with SIMD, the scales and mins per 16 written per row.
template <kernels::GgmlType T>
LA_512 void r16_pack_tile(const uint8_t* r16, int64_t n, int64_t g, uint8_t* packed) {
    const int64_t nsb = n / kernels::kSuperBlock;
    const uint8_t* gd = r16 + g * kernels::ref::kquant_r16_group_bytes(T, n);
    const __m512i m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10), m30 = _mm512_set1_epi8(0x30);
    for (int64_t sb = 0; sb < nsb; ++sb) {
        uint8_t* t = packed + sb * kKTileBytes;
        auto* fs = reinterpret_cast<float*>(t + kKTileFs);
        auto* mn = reinterpret_cast<int16_t*>(t + kKTileMn);
        auto* dm = reinterpret_cast<float*>(t + kKTileDm);
        uint8_t* tq = t + kKTileQ;
        if constexpr (T == kernels::GgmlType::kQ6_K) {
            const uint8_t* m = gd + sb * kR16Q6Main;
            for (int h = 0; h < 2; ++h)
                for (int u = 0; u < 8; ++u) {
                    const __m512i a = _mm512_load_si512(m + 64 * (16 * h + u));
                    const __m512i b = _mm512_load_si512(m + 64 * (16 * h + 8 + u));
                    const __m512i hb = _mm512_load_si512(m + kR16Q6Qh + 64 * (8 * h + u));
                    // Element 128h + 32k + 4u + j is quad 32h + 8k + u.
                    _mm512_store_si512(
                        tq + 64 * (32 * h + u),
                        _mm512_ternarylogic_epi32(_mm512_and_si512(a, m4), _mm512_slli_epi16(hb, 4), m30, 0xf8));
                    _mm512_store_si512(
                        tq + 64 * (32 * h + 8 + u),
                        _mm512_ternarylogic_epi32(_mm512_and_si512(b, m4), _mm512_slli_epi16(hb, 2), m30, 0xf8));
                    _mm512_store_si512(
                        tq + 64 * (32 * h + 16 + u),
                        _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(a, 4), m4), hb, m30, 0xf8));
                    _mm512_store_si512(tq + 64 * (32 * h + 24 + u),
                                       _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(b, 4), m4),
                                                                 _mm512_srli_epi16(hb, 2), m30, 0xf8));
                }
            const __m512 d = halves_to_ps(gd + nsb * kR16Q6Main + sb * kR16Q6Tail);
            for (int k = 0; k < 16; ++k) {
                const __m512i sc =
                    _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m + kR16Q6Sc + 16 * k)));
                _mm512_store_ps(fs + 16 * k, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
                // min = 32 * scale, as int16 pairs (groups 2p, 2p + 1) per row
                const __m512i m32 = _mm512_slli_epi32(sc, 5);
                int32_t v[16];
                _mm512_storeu_si512(v, m32);
                for (int i = 0; i < 16; ++i) mn[32 * (k / 2) + 2 * i + k % 2] = int16_t(v[i]);
            }
            _mm512_store_ps(dm, d);
        } else {
            constexpr bool kQ5 = T == kernels::GgmlType::kQ5_K;
            constexpr size_t kMain = kR16Q45Main<kQ5>, kSc = kR16Q45Sc<kQ5>;
            const uint8_t* m = gd + sb * kMain;
            for (int c = 0; c < 4; ++c)
                for (int tt = 0; tt < 8; ++tt) {
                    const __m512i w = _mm512_load_si512(m + 64 * (8 * c + tt));
                    __m512i lo = _mm512_and_si512(w, m4);
                    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
                    if constexpr (kQ5) {
                        const __m512i h = _mm512_load_si512(m + 2048 + 64 * tt);
                        const __m512i hl = c == 0   ? _mm512_slli_epi16(h, 4)
                                           : c == 1 ? _mm512_slli_epi16(h, 2)
                                           : c == 2 ? h
                                                    : _mm512_srli_epi16(h, 2);
                        lo = _mm512_ternarylogic_epi32(lo, hl, m10, 0xf8);
                        hi = _mm512_ternarylogic_epi32(hi, _mm512_srli_epi16(hl, 1), m10, 0xf8);
                    }
                    _mm512_store_si512(tq + 64 * (16 * c + tt), lo);
                    _mm512_store_si512(tq + 64 * (16 * c + 8 + tt), hi);
                }
            const uint8_t* tl = gd + nsb * kMain + sb * kR16Q45Tail;
            const __m512 d = halves_to_ps(tl), dmin = halves_to_ps(tl + 32);
            for (int j = 0; j < 8; ++j) {
                const __m512 f = _mm512_mul_ps(d, bytes_to_ps_u(m + kSc + 16 * j));
                _mm512_store_ps(fs + 16 * (2 * j), f);
                _mm512_store_ps(fs + 16 * (2 * j + 1), f);
            }
            // Groups of 16 2p and 2p + 1 share the min of group of 32 p.
            for (int p = 0; p < 8; ++p)
                for (int i = 0; i < 16; ++i) {
                    const int16_t v = m[kSc + 128 + 32 * (p / 2) + 2 * i + p % 2];
                    mn[32 * p + 2 * i] = mn[32 * p + 2 * i + 1] = v;
                }
            _mm512_store_ps(dm, dmin);
        }
    }
}

const TypedR16 kR16Q4K = {r16_gemv<kernels::GgmlType::kQ4_K>, r16_pack_tile<kernels::GgmlType::kQ4_K>};
const TypedR16 kR16Q5K = {r16_gemv<kernels::GgmlType::kQ5_K>, r16_pack_tile<kernels::GgmlType::kQ5_K>};
const TypedR16 kR16Q6K = {r16_gemv<kernels::GgmlType::kQ6_K>, r16_pack_tile<kernels::GgmlType::kQ6_K>};

}  // namespace

const TypedR16* r16_of(kernels::GgmlType t) {
    using W = kernels::GgmlType;
    return t == W::kQ4_K ? &kR16Q4K : t == W::kQ5_K ? &kR16Q5K : t == W::kQ6_K ? &kR16Q6K : nullptr;
}

}  // namespace lazyattn::backend::cpu::simd::avx512
