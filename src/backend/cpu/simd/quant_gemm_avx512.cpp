// AVX-512 VNNI implementation of quant_gemm.h. Functions carry their own target attributes, so
// this file is compiled for baseline x86-64 and only entered after the CPU check in
// quant_dot_dispatch.cpp.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/simd/quant_dot_impl.h"
#include "backend/cpu/simd/quant_gemm.h"

// GCC 12 flags the undefined upper lanes inside its own AVX-512 reduction intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace lazyattn::backend::cpu::simd {
namespace {

using kernels::GgmlType;

#define LA_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

// The three block types, named short for the templates below.
constexpr GgmlType kQ4_0 = GgmlType::kQ4_0, kQ4_1 = GgmlType::kQ4_1, kQ8_0 = GgmlType::kQ8_0;

// GGUF block geometry: bytes per block (kernels/params/quant_blocks.h) and offset of qs.
template <GgmlType K>
constexpr size_t kBlockBytes = kernels::weight_block_bytes(K);
template <GgmlType K>
constexpr size_t kQsOffset = K == kQ4_1 ? 4 : 2;

inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

LA_AVX512 inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// ---- activations --------------------------------------------------------------------------

// One block of 32, as kernels::ref::quantize_block: d = amax / 127, q = nearest-even(x * 127 / amax).
LA_AVX512 void prepare_row_avx512(const float* x, const QuantActs& a, int64_t r, GgmlType w) {
    int8_t* qs = a.qs_row(r);
    float* ds = a.ds_row(r);
    int32_t* corr = a.corr_row(r);
    const int32_t corr_scale = w == GgmlType::kQ4_0 ? -8 : w == GgmlType::kQ8_0 ? -128 : 0;
    for (int64_t b = 0; b < a.nb; ++b) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        const float d = amax / 127.0f;
        const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
        const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));  // MXCSR default: nearest-even
        const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
        const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        const __m128i lo = _mm512_cvtepi32_epi8(q0), hi = _mm512_cvtepi32_epi8(q1);
        if (a.pairs) {
            int8_t* p = qs + (b / 2) * 64 + (b % 2) * 16;
            _mm_storeu_si128(reinterpret_cast<__m128i*>(p), lo);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 32), hi);
        } else {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b), lo);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b + 16), hi);
        }
        ds[2 * b] = half_to_float(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
        ds[2 * b + 1] = half_to_float(_cvtss_sh(float(sum) * d, _MM_FROUND_TO_NEAREST_INT));
        corr[b] = corr_scale * sum;
    }
    if (a.nb_pad != a.nb) {  // the zero pad block
        const int64_t b = a.nb;
        if (a.pairs) {
            int8_t* p = qs + (b / 2) * 64 + 16;
            std::memset(p, 0, 16);
            std::memset(p + 32, 0, 16);
        } else {
            std::memset(qs + 32 * b, 0, 32);
        }
        ds[2 * b] = ds[2 * b + 1] = 0.0f;
        corr[b] = 0;
    }
}

// ---- gemv: lanes = k, two blocks per register ----------------------------------------------

// The 64 weight values of blocks b0, b1 as u8, in the order the activations use.
template <GgmlType K>
LA_AVX512 inline __m512i load_weight_pair(const uint8_t* b0, const uint8_t* b1) {
    if constexpr (K == kQ8_0) {
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + kQsOffset<K>));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + kQsOffset<K>));
        return _mm512_xor_si512(_mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1), _mm512_set1_epi8(char(0x80)));
    } else {
        const __m256i t = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + kQsOffset<K>))),
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + kQsOffset<K>)), 1);
        const __m512i both = _mm512_inserti64x4(_mm512_zextsi256_si512(t), _mm256_srli_epi16(t, 4), 1);
        return _mm512_and_si512(both, _mm512_set1_epi8(0x0f));  // b0 lo, b1 lo, b0 hi, b1 hi
    }
}

// NW weight rows x R activation rows, all block pairs.
template <GgmlType K, int NW, int R>
LA_AVX512 void gemv_tile(const uint8_t* w, size_t rb, const QuantActs& a, float* y, int64_t ys, const float* bias) {
    constexpr size_t bs = kBlockBytes<K>;
    // Lane -> which of the pair's two scales (element 0 or 2 of (d0 d0' d1 d1')).
    const __m512i scale_idx = K == kQ8_0 ? _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2)
                                         : _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2);
    constexpr __mmask16 corr_b1_lane = K == kQ8_0 ? 0x0100 : 0x0010;
    __m512 acc[NW][R];
    __m128 macc[NW][R];
    for (int i = 0; i < NW; ++i) {
        for (int r = 0; r < R; ++r) {
            acc[i][r] = _mm512_setzero_ps();
            macc[i][r] = _mm_setzero_ps();
        }
    }
    const int64_t num_pairs = a.nb_pad / 2;
    for (int64_t p = 0; p < num_pairs; ++p) {
        const int64_t b0 = 2 * p, b1 = b0 + 1 < a.nb ? b0 + 1 : b0;  // the pad block reuses b0 (x = 0)
        __m512i xq[R], init[R];
        __m128 xds[R];
        for (int r = 0; r < R; ++r) {
            xq[r] = _mm512_load_si512(a.qs_row(r) + 64 * p);
            xds[r] = _mm_loadu_ps(a.ds_row(r) + 4 * p);
            if constexpr (K == kQ4_1) {
                init[r] = _mm512_setzero_si512();
            } else {  // the correction of b0 in lane 0, of b1 in the first lane of b1
                const int32_t* c = a.corr_row(r) + 2 * p;
                init[r] = _mm512_mask_set1_epi32(_mm512_maskz_set1_epi32(1, c[0]), corr_b1_lane, c[1]);
            }
        }
        for (int i = 0; i < NW; ++i) {
            const uint8_t* wr = w + i * rb;
            if constexpr (K == kQ8_0) {  // one row at a time: the next rows, 8 KiB ahead (68 bytes per pair)
                _mm_prefetch(reinterpret_cast<const char*>(wr + b0 * bs + 8192), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(wr + b0 * bs + 8192 + 64), _MM_HINT_T0);
            }
            const __m512i wq = load_weight_pair<K>(wr + b0 * bs, wr + b1 * bs);
            // (d0, m0, d1, m1) of the weights; for Q4_0/Q8_0 the m slots hold qs bytes, unused.
            const __m128 wdm = _mm_cvtph_ps(_mm_unpacklo_epi32(_mm_cvtsi32_si128(int(load_u32(wr + b0 * bs))),
                                                               _mm_cvtsi32_si128(int(load_u32(wr + b1 * bs)))));
            for (int r = 0; r < R; ++r) {
                const __m512i isum = _mm512_dpbusd_epi32(init[r], wq, xq[r]);
                const __m128 prod = _mm_mul_ps(wdm, xds[r]);  // (d0 dx0, m0 s0, d1 dx1, m1 s1)
                const __m512 scale = _mm512_permutexvar_ps(scale_idx, _mm512_zextps128_ps512(prod));
                acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc[i][r]);
                if constexpr (K == kQ4_1) macc[i][r] = _mm_add_ps(macc[i][r], prod);
            }
        }
    }
    for (int i = 0; i < NW; ++i) {
        const float b = bias != nullptr ? bias[i] : 0.0f;
        for (int r = 0; r < R; ++r) {
            float v = _mm512_reduce_add_ps(acc[i][r]) + b;
            if constexpr (K == kQ4_1) {
                alignas(16) float m[4];
                _mm_store_ps(m, macc[i][r]);
                v += m[1] + m[3];
            }
            y[r * ys + i] = v;
        }
    }
}

template <GgmlType K, int R>
LA_AVX512 void gemv_rows(const uint8_t* w, size_t rb, int64_t o0, int64_t o1, const QuantActs& a, float* y, int64_t ys,
                         const float* bias) {
    // Several weight rows share each activation load. Not for Q8_0: interleaving its 34-byte-block
    // rows ran 3x slower from memory (8 vs 29 GB/s on Zen 4), while one row at a time is not
    // compute bound.
    constexpr int NW = K == kQ8_0 ? 1 : R <= 2 ? 4 : 2;
    int64_t o = o0;
    for (; o + NW <= o1; o += NW) gemv_tile<K, NW, R>(w + o * rb, rb, a, y + o, ys, bias ? bias + o : nullptr);
    for (; o < o1; ++o) gemv_tile<K, 1, R>(w + o * rb, rb, a, y + o, ys, bias ? bias + o : nullptr);
}

template <GgmlType K>
LA_AVX512 void gemv_avx512(const uint8_t* w, size_t rb, int64_t o0, int64_t o1, const QuantActs& a, int rows, float* y,
                           int64_t ys, const float* bias) {
    switch (rows) {
        case 1:
            gemv_rows<K, 1>(w, rb, o0, o1, a, y, ys, bias);
            break;
        case 2:
            gemv_rows<K, 2>(w, rb, o0, o1, a, y, ys, bias);
            break;
        case 3:
            gemv_rows<K, 3>(w, rb, o0, o1, a, y, ys, bias);
            break;
        default:
            gemv_rows<K, 4>(w, rb, o0, o1, a, y, ys, bias);
            break;
    }
}

// ---- gemm: lanes = weight rows, a repacked tile of 32 rows ---------------------------------

// Per block, kPackedBlockBytes: u8 values as [8 groups of 4 k][32 rows][4], then d[32], m[32].
constexpr size_t kPackedBlockBytes = kGemmTileRows * kPackedBytesPerRowBlock;

template <GgmlType K>
LA_AVX512 void pack_avx512(const uint8_t* w, size_t rb, int nw, int64_t nb, uint8_t* packed) {
    constexpr size_t bs = kBlockBytes<K>;
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* pb = packed + b * kPackedBlockBytes;
        auto* d = reinterpret_cast<float*>(pb + 1024);
        auto* m = d + kGemmTileRows;
        for (int i = 0; i < kGemmTileRows; ++i) {
            alignas(32) uint32_t v[8] = {};
            d[i] = m[i] = 0.0f;
            if (i < nw) {
                const uint8_t* blk = w + i * rb + b * bs;
                if constexpr (K == kQ8_0) {
                    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQsOffset<K>));
                    _mm256_store_si256(reinterpret_cast<__m256i*>(v),
                                       _mm256_xor_si256(q, _mm256_set1_epi8(char(0x80))));
                } else {
                    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQsOffset<K>));
                    const __m128i mask = _mm_set1_epi8(0x0f);
                    _mm_store_si128(reinterpret_cast<__m128i*>(v), _mm_and_si128(q, mask));
                    _mm_store_si128(reinterpret_cast<__m128i*>(v + 4), _mm_and_si128(_mm_srli_epi16(q, 4), mask));
                }
                uint16_t h[2];
                std::memcpy(h, blk, 4);
                d[i] = half_to_float(h[0]);
                if constexpr (K == kQ4_1) m[i] = half_to_float(h[1]);
            }
            for (int j = 0; j < 8; ++j) std::memcpy(pb + j * 128 + i * 4, &v[j], 4);
        }
    }
}

template <GgmlType K, int MR>
LA_AVX512 void gemm_rows(const uint8_t* packed, int64_t nb, const QuantActs& a, int64_t r, float* y, int64_t ys, int nw,
                         const float* bias) {
    __m512 acc[2][MR];
    for (int g = 0; g < 2; ++g) {
        for (int i = 0; i < MR; ++i) acc[g][i] = _mm512_setzero_ps();
    }
    const int8_t* xq[MR];
    const float* xds[MR];
    const int32_t* xc[MR];
    for (int i = 0; i < MR; ++i) {
        xq[i] = a.qs_row(r + i);
        xds[i] = a.ds_row(r + i);
        xc[i] = a.corr_row(r + i);
    }
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* pb = packed + b * kPackedBlockBytes;
        __m512i isum[2][MR];
        for (int i = 0; i < MR; ++i) {
            isum[0][i] = isum[1][i] = K == kQ4_1 ? _mm512_setzero_si512() : _mm512_set1_epi32(xc[i][b]);
        }
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            const __m512i w0 = _mm512_load_si512(pb + j * 128), w1 = _mm512_load_si512(pb + j * 128 + 64);
            for (int i = 0; i < MR; ++i) {
                const __m512i x = _mm512_set1_epi32(int(load_u32(xq[i] + 32 * b + 4 * j)));
                isum[0][i] = _mm512_dpbusd_epi32(isum[0][i], w0, x);
                isum[1][i] = _mm512_dpbusd_epi32(isum[1][i], w1, x);
            }
        }
        const auto* dw = reinterpret_cast<const float*>(pb + 1024);
        const __m512 d0 = _mm512_load_ps(dw), d1 = _mm512_load_ps(dw + 16);
        for (int i = 0; i < MR; ++i) {
            const __m512 dx = _mm512_set1_ps(xds[i][2 * b]);
            acc[0][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[0][i]), _mm512_mul_ps(d0, dx), acc[0][i]);
            acc[1][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[1][i]), _mm512_mul_ps(d1, dx), acc[1][i]);
        }
        if constexpr (K == kQ4_1) {
            const __m512 m0 = _mm512_load_ps(dw + 32), m1 = _mm512_load_ps(dw + 48);
            for (int i = 0; i < MR; ++i) {
                const __m512 sx = _mm512_set1_ps(xds[i][2 * b + 1]);
                acc[0][i] = _mm512_fmadd_ps(m0, sx, acc[0][i]);
                acc[1][i] = _mm512_fmadd_ps(m1, sx, acc[1][i]);
            }
        }
    }
    for (int g = 0; g < 2; ++g) {
        const int n = nw - 16 * g;
        if (n <= 0) break;
        const __mmask16 mask = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
        const __m512 bv = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + 16 * g) : _mm512_setzero_ps();
        for (int i = 0; i < MR; ++i)
            _mm512_mask_storeu_ps(y + (r + i) * ys + 16 * g, mask, _mm512_add_ps(acc[g][i], bv));
    }
}

template <GgmlType K>
LA_AVX512 void gemm_tile_avx512(const uint8_t* packed, int64_t nb, const QuantActs& a, int64_t r0, int64_t r1, float* y,
                                int64_t ys, int nw, const float* bias) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) gemm_rows<K, 4>(packed, nb, a, r, y, ys, nw, bias);
    switch (r1 - r) {
        case 3:
            gemm_rows<K, 3>(packed, nb, a, r, y, ys, nw, bias);
            break;
        case 2:
            gemm_rows<K, 2>(packed, nb, a, r, y, ys, nw, bias);
            break;
        case 1:
            gemm_rows<K, 1>(packed, nb, a, r, y, ys, nw, bias);
            break;
        default:
            break;
    }
}

// ---- weights repacked at load: groups of 16 rows, lanes = rows, 4-bit (quant_gemm.h) ----------

template <GgmlType K>
constexpr size_t kR16BlockBytes = K == kQ4_1   ? 320
                                  : K == kQ8_0 ? 544
                                               : 288;
// Q8_0's software prefetch distance (from memory it was 1.5x Q4_0's time per byte without).
constexpr size_t kR16Prefetch = 8192;
// Quant vectors per block (each 16 rows x 4 bytes); the fp16 d follow them.
template <GgmlType K>
constexpr int kR16Vectors = K == kQ8_0 ? 8 : 4;

template <GgmlType K>
void repack_r16(const uint8_t* w, size_t rb, int64_t out_dim, int64_t nb, uint8_t* dst) {
    constexpr size_t bs = kBlockBytes<K>, d_at = 64 * kR16Vectors<K>;
    for (int64_t g = 0; g < r16_groups(out_dim); ++g) {
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t* pb = dst + (g * nb + b) * kR16BlockBytes<K>;
            std::memset(pb, 0, kR16BlockBytes<K>);
            for (int i = 0; i < kR16Rows && g * kR16Rows + i < out_dim; ++i) {
                const uint8_t* blk = w + (g * kR16Rows + i) * rb + b * bs;
                for (int t = 0; t < kR16Vectors<K>; ++t) {
                    uint32_t v = load_u32(blk + kQsOffset<K> + 4 * t);
                    if constexpr (K == kQ8_0) v ^= 0x80808080u;  // q + 128
                    std::memcpy(pb + 64 * t + 4 * i, &v, 4);
                }
                std::memcpy(pb + d_at + 2 * i, blk, 2);                                     // d
                if constexpr (K == kQ4_1) std::memcpy(pb + d_at + 32 + 2 * i, blk + 2, 2);  // m
            }
        }
    }
}

// NG groups (16 rows each) x R activation rows, all blocks. pw: the first group's block 0.
template <GgmlType K, int NG, int R>
LA_AVX512 void gemv_r16_groups(const uint8_t* pw, int64_t nb, const QuantActs& a, __m512 acc[NG][R]) {
    constexpr size_t bb = kR16BlockBytes<K>;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int g = 0; g < NG; ++g) {
        for (int r = 0; r < R; ++r) acc[g][r] = _mm512_setzero_ps();
    }
    const int64_t group_stride = nb * bb;
    for (int64_t b = 0; b < nb; ++b) {
        __m512i isum[NG][R];
        for (int r = 0; r < R; ++r) {
            const __m512i init = K == kQ4_1 ? _mm512_setzero_si512() : _mm512_set1_epi32(a.corr_row(r)[b]);
            for (int g = 0; g < NG; ++g) isum[g][r] = init;
        }
        if constexpr (K == kQ8_0) {
            for (int g = 0; g < NG; ++g) {
                const uint8_t* pb = pw + g * group_stride + b * bb;
                _mm_prefetch(reinterpret_cast<const char*>(pb + kR16Prefetch), _MM_HINT_T0);
                for (int j = 64; j < int(bb); j += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(pb + kR16Prefetch + j), _MM_HINT_T0);
            }
            for (int t = 0; t < 8; ++t) {
                __m512i xv[R];
                for (int r = 0; r < R; ++r) xv[r] = _mm512_set1_epi32(int(load_u32(a.qs_row(r) + 32 * b + 4 * t)));
                for (int g = 0; g < NG; ++g) {
                    const __m512i wv = _mm512_loadu_si512(pw + g * group_stride + b * bb + 64 * t);
                    for (int r = 0; r < R; ++r) isum[g][r] = _mm512_dpbusd_epi32(isum[g][r], wv, xv[r]);
                }
            }
        } else {
            for (int t = 0; t < 4; ++t) {
                __m512i xlo[R], xhi[R];
                for (int r = 0; r < R; ++r) {
                    const int8_t* xq = a.qs_row(r) + 32 * b + 4 * t;
                    xlo[r] = _mm512_set1_epi32(int(load_u32(xq)));
                    xhi[r] = _mm512_set1_epi32(int(load_u32(xq + 16)));
                }
                for (int g = 0; g < NG; ++g) {
                    const __m512i wv = _mm512_loadu_si512(pw + g * group_stride + b * bb + 64 * t);
                    const __m512i lo = _mm512_and_si512(wv, low4);
                    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(wv, 4), low4);
                    for (int r = 0; r < R; ++r) {
                        isum[g][r] = _mm512_dpbusd_epi32(isum[g][r], lo, xlo[r]);
                        isum[g][r] = _mm512_dpbusd_epi32(isum[g][r], hi, xhi[r]);
                    }
                }
            }
        }
        for (int g = 0; g < NG; ++g) {
            const uint8_t* pb = pw + g * group_stride + b * bb;
            const __m512 d =
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 64 * kR16Vectors<K>)));
            for (int r = 0; r < R; ++r) {
                acc[g][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[g][r]),
                                            _mm512_mul_ps(d, _mm512_set1_ps(a.ds_row(r)[2 * b])), acc[g][r]);
            }
            if constexpr (K == kQ4_1) {
                const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 256 + 32)));
                for (int r = 0; r < R; ++r)
                    acc[g][r] = _mm512_fmadd_ps(m, _mm512_set1_ps(a.ds_row(r)[2 * b + 1]), acc[g][r]);
            }
        }
    }
}

// Writes group g's 16 outputs per activation row (rows past out_dim are not written).
template <int R>
LA_AVX512 inline void store_r16(int64_t g, const __m512* acc_g, int64_t out_dim, float* y, int64_t ys,
                                const float* bias) {
    const int64_t o = g * kR16Rows;
    const int64_t n = std::min<int64_t>(kR16Rows, out_dim - o);
    const __mmask16 mask = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
    const __m512 bv = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + o) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * ys + o, mask, _mm512_add_ps(acc_g[r], bv));
}

template <GgmlType K, int R>
LA_AVX512 void gemv_r16_rows(const uint8_t* r16, int64_t nb, int64_t g0, int64_t g1, int64_t out_dim,
                             const QuantActs& a, float* y, int64_t ys, const float* bias) {
    constexpr int NG = R <= 2 ? 2 : 1;
    const size_t group_bytes = size_t(nb) * kR16BlockBytes<K>;
    auto store = [&](int64_t g, const __m512* acc_g) { store_r16<R>(g, acc_g, out_dim, y, ys, bias); };
    int64_t g = g0;
    for (; g + NG <= g1; g += NG) {
        __m512 acc[NG][R];
        gemv_r16_groups<K, NG, R>(r16 + g * group_bytes, nb, a, acc);
        for (int i = 0; i < NG; ++i) store(g + i, acc[i]);
    }
    for (; g < g1; ++g) {
        __m512 acc[1][R];
        gemv_r16_groups<K, 1, R>(r16 + g * group_bytes, nb, a, acc);
        store(g, acc[0]);
    }
}

template <GgmlType K>
LA_AVX512 void gemv_r16_avx512(const uint8_t* r16, int64_t nb, int64_t g0, int64_t g1, int64_t out_dim,
                               const QuantActs& a, int rows, float* y, int64_t ys, const float* bias) {
    switch (rows) {
        case 1:
            gemv_r16_rows<K, 1>(r16, nb, g0, g1, out_dim, a, y, ys, bias);
            break;
        case 2:
            gemv_r16_rows<K, 2>(r16, nb, g0, g1, out_dim, a, y, ys, bias);
            break;
        case 3:
            gemv_r16_rows<K, 3>(r16, nb, g0, g1, out_dim, a, y, ys, bias);
            break;
        default:
            gemv_r16_rows<K, 4>(r16, nb, g0, g1, out_dim, a, y, ys, bias);
            break;
    }
}

template <GgmlType K>
LA_AVX512 void pack_from_r16_avx512(const uint8_t* r16, int64_t nb, int64_t tile, int64_t num_groups, uint8_t* packed) {
    constexpr size_t bb = kR16BlockBytes<K>;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* pb = packed + b * kPackedBlockBytes;
        auto* d = reinterpret_cast<float*>(pb + 1024);
        for (int h = 0; h < 2; ++h) {
            const int64_t g = 2 * tile + h;
            if (g >= num_groups) {
                for (int j = 0; j < 8; ++j) _mm512_store_si512(pb + j * 128 + 64 * h, _mm512_setzero_si512());
                _mm512_store_ps(d + 16 * h, _mm512_setzero_ps());
                _mm512_store_ps(d + 32 + 16 * h, _mm512_setzero_ps());
                continue;
            }
            const uint8_t* src = r16 + (g * nb + b) * bb;
            if constexpr (K == kQ8_0) {  // already u8 (q + 128)
                for (int t = 0; t < 8; ++t) _mm512_store_si512(pb + t * 128 + 64 * h, _mm512_loadu_si512(src + 64 * t));
            } else {
                for (int t = 0; t < 4; ++t) {
                    const __m512i wv = _mm512_loadu_si512(src + 64 * t);
                    _mm512_store_si512(pb + t * 128 + 64 * h, _mm512_and_si512(wv, low4));
                    _mm512_store_si512(pb + (t + 4) * 128 + 64 * h, _mm512_and_si512(_mm512_srli_epi16(wv, 4), low4));
                }
            }
            constexpr size_t d_at = 64 * kR16Vectors<K>;
            _mm512_store_ps(d + 16 * h,
                            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + d_at))));
            _mm512_store_ps(d + 32 + 16 * h,
                            K == kQ4_1
                                ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + d_at + 32)))
                                : _mm512_setzero_ps());
        }
    }
}

}  // namespace

const QuantGemmKernels kAvx512GemmKernels = {
    prepare_row_avx512,
    {gemv_avx512<kQ4_0>, gemv_avx512<kQ4_1>, gemv_avx512<kQ8_0>},
    {pack_avx512<kQ4_0>, pack_avx512<kQ4_1>, pack_avx512<kQ8_0>},
    {gemm_tile_avx512<kQ4_0>, gemm_tile_avx512<kQ4_1>, gemm_tile_avx512<kQ8_0>},
    {repack_r16<kQ4_0>, repack_r16<kQ4_1>, repack_r16<kQ8_0>},
    {gemv_r16_avx512<kQ4_0>, gemv_r16_avx512<kQ4_1>, gemv_r16_avx512<kQ8_0>},
    {pack_from_r16_avx512<kQ4_0>, pack_from_r16_avx512<kQ4_1>, pack_from_r16_avx512<kQ8_0>},
};

}  // namespace lazyattn::backend::cpu::simd
