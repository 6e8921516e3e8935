// The prefill tile layouts of the typed weights (typed_dot.h's TypedTile), shared by the AVX2 and
// AVX-512 tile kernels (typed_tile_avx2.cpp, typed_dot_avx512.cpp) and the repacked K-quants
// (typed_dot_r16_avx512.cpp): a tile of 16 weight rows is brought once into lanes = rows, so a
// vector holds one value (or 4 bytes) of each row and every activation row of a task streams
// past it with broadcasts. One layout per family, whatever the vector width that reads it: the
// AVX2 kernels read a 16-row vector as two 8-row halves. Only included by files entered after
// the CPU check (AVX2 target).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/simd/kquant_unpack_avx2.h"
#include "core/fp16.h"
#include "kernels/params/quant_blocks.h"
#include "kernels/ref/kquant_ref.h"

namespace lazyattn::backend::cpu::simd::tilepack {

using kernels::ref::KUnpacked;

#define LA_TILEPACK __attribute__((target("avx2,fma,f16c")))

// K-quant tile, per super-block: q [64 k-quads][16 rows][4] u8, fs [16 groups][16 rows] fp32
// (d * scale), mn [8 group pairs][16 rows][2] int16 (mins), dm [16 rows] fp32 (dmin).
constexpr size_t kKTileQ = 0, kKTileFs = 4096, kKTileMn = 5120, kKTileDm = 5632, kKTileBytes = 5696;

inline size_t ktile_bytes(int64_t n) { return size_t(n / kernels::kSuperBlock) * kKTileBytes; }

// Rows [0, num_w_rows) of a K-quant matrix in the GGUF layout into the tile; absent rows are 0.
template <void (*Unpack)(const uint8_t*, KUnpacked*), size_t kBytes>
LA_TILEPACK void pack_kquant(const uint8_t* w, size_t w_row_bytes, int num_w_rows, int64_t n, uint8_t* packed) {
    const int64_t nsb = n / kernels::kSuperBlock;
    std::memset(packed, 0, ktile_bytes(n));
    KUnpacked u;
    for (int row = 0; row < num_w_rows; ++row) {
        for (int64_t i = 0; i < nsb; ++i) {
            Unpack(w + row * w_row_bytes + i * kBytes, &u);
            uint8_t* t = packed + i * kKTileBytes;
            const auto* qw = reinterpret_cast<const uint32_t*>(u.q);
            auto* tq = reinterpret_cast<uint32_t*>(t + kKTileQ) + row;
            for (int k = 0; k < 64; ++k) tq[16 * k] = qw[k];
            auto* fs = reinterpret_cast<float*>(t + kKTileFs) + row;
            auto* mn = reinterpret_cast<int16_t*>(t + kKTileMn) + 2 * row;
            for (int g = 0; g < 16; ++g) {
                fs[16 * g] = u.d * float(u.scale[g]);
                mn[32 * (g / 2) + g % 2] = u.min[g];
            }
            reinterpret_cast<float*>(t + kKTileDm)[row] = u.dmin;
        }
    }
}

// F16/BF16 tile: [n][16 rows] fp32 (widened once per tile; absent rows are 0).
inline size_t ftile_bytes(int64_t n) { return size_t(n) * 64; }

template <bool kBf16>
LA_TILEPACK inline __m256 widen8(const uint8_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (kBf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

template <bool kBf16>
LA_TILEPACK void pack_16bit(const uint8_t* w, size_t w_row_bytes, int num_w_rows, int64_t n, uint8_t* packed) {
    auto* t = reinterpret_cast<float*>(packed);
    if (num_w_rows < 16) std::memset(packed, 0, ftile_bytes(n));
    // 16 x 8 blocks: widen 8 elements of each row, then transpose through memory (L1).
    alignas(32) float block[16][8];
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        for (int row = 0; row < num_w_rows; ++row)
            _mm256_store_ps(block[row], widen8<kBf16>(w + row * w_row_bytes + 2 * k));
        for (int j = 0; j < 8; ++j) {
            for (int row = 0; row < num_w_rows; ++row) t[(k + j) * 16 + row] = block[row][j];
        }
    }
    for (; k < n; ++k) {
        for (int row = 0; row < num_w_rows; ++row) {
            uint16_t h;
            std::memcpy(&h, w + row * w_row_bytes + 2 * k, 2);
            t[k * 16 + row] = kBf16 ? bf16_to_fp32(h) : fp16_to_fp32(h);
        }
    }
}

// Tile of the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0), per block: q [8 k-quads][16
// rows][4] bytes (unsigned 0..31 for the 4/5-bit types, signed for Q8_0), d [16 rows] fp32, m [16
// rows] fp32 (Q4_1/Q5_1's min; the offsets of Q4_0 (8) and Q5_0 (16) are applied against the
// activation block's sum instead).
constexpr size_t kB32TileQ = 0, kB32TileD = 512, kB32TileM = 576, kB32TileBytes = 640;

inline size_t b32tile_bytes(int64_t n) { return size_t(n / 32) * kB32TileBytes; }

// The 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) are template arguments of type
// kernels::GgmlType.
using kernels::GgmlType;

// The 32 quants of one GGUF block as bytes, its scale d and min m (0 where the type has none).
template <GgmlType kType>
LA_TILEPACK inline void block32_quants(const uint8_t* blk, uint8_t* q, float* d, float* m) {
    constexpr bool kHasMin = kType == GgmlType::kQ4_1 || kType == GgmlType::kQ5_1;
    *d = kunpack::half(blk);
    *m = kHasMin ? kunpack::half(blk + 2) : 0.0f;
    if constexpr (kType == GgmlType::kQ8_0) {
        std::memcpy(q, blk + 2, 32);
        return;
    }
    constexpr bool kFive = kType == GgmlType::kQ5_0 || kType == GgmlType::kQ5_1;
    const size_t qs = (kHasMin ? 4 : 2) + (kFive ? 4 : 0);  // after d (and m) (and the fifth bits)
    uint32_t qh = 0;
    if (kFive) std::memcpy(&qh, blk + qs - 4, 4);
    for (int j = 0; j < 16; ++j) {
        q[j] = uint8_t((blk[qs + j] & 0x0f) | (((qh >> j) & 1) << 4));
        q[j + 16] = uint8_t((blk[qs + j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    }
}

template <GgmlType kType, size_t kBlockBytes>
LA_TILEPACK void pack_block32(const uint8_t* w, size_t w_row_bytes, int num_w_rows, int64_t n, uint8_t* packed) {
    std::memset(packed, 0, b32tile_bytes(n));
    for (int row = 0; row < num_w_rows; ++row) {
        for (int64_t b = 0; b < n / 32; ++b) {
            uint8_t* t = packed + b * kB32TileBytes;
            uint8_t q[32];
            block32_quants<kType>(w + row * w_row_bytes + b * kBlockBytes, q,
                                  reinterpret_cast<float*>(t + kB32TileD) + row,
                                  reinterpret_cast<float*>(t + kB32TileM) + row);
            auto* tq = reinterpret_cast<uint32_t*>(t + kB32TileQ) + row;
            for (int k = 0; k < 8; ++k) std::memcpy(&tq[16 * k], q + 4 * k, 4);
        }
    }
}

#undef LA_TILEPACK

}  // namespace lazyattn::backend::cpu::simd::tilepack
