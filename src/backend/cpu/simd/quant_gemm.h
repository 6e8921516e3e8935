// Register-tiled quantized matmul kernels (AVX-512 VNNI). Two shapes:
//
//  * gemv (decode, 1-4 activation rows): weights stream from memory once, in their GGUF layout;
//    one 512-bit vpdpbusd covers two blocks, several weight rows share each activation load, and
//    the block scales are combined with one vector multiply per block pair (no scalar work).
//  * gemm (prefill): a tile of 32 weight rows is repacked once into thread-local memory with
//    lanes = weight rows (16 rows per register, 4 bytes of k per lane, unpacked to u8), then 4
//    activation rows at a time stream past it: 64 vpdpbusd per block against 8 int->float
//    conversions, the scales applied once per block for 16 rows.
//
// Both read activations prepared by prepare_row (QuantActs below), not Q8 blocks, so that the
// integer operands load contiguously. The integer sums are exactly those of the scalar reference
// (kernels/ref/quant_ref.cpp): weights enter vpdpbusd unsigned (Q4: q in 0..15, Q8_0: q + 128)
// and the offset is removed with an integer correction per block (-8 or -128 times sum(x)).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/params/quant_blocks.h"

namespace lazyattn::backend::cpu::simd {

// The activation rows of one matmul, in the layout the kernels read. Per row, nb_pad blocks
// (nb rounded up to even; the pad block is all zeros):
//   qs   int8 [nb_pad * 32]: natural order, or with `pairs`, each block pair interleaved by
//        halves, b0[0..16) b1[0..16) b0[16..32) b1[16..32) (how a Q4 pair unpacks in one register)
//   ds   float [nb_pad * 2]: (d, s) per block: d = the fp16 scale, s = the Q8_1 fp16 d*sum(q)
//   corr int32 [nb_pad]: -8 * sum(q) for Q4_0 weights, -128 * sum(q) for Q8_0, 0 for Q4_1
struct QuantActs {
    int8_t* qs;
    float* ds;
    int32_t* corr;
    int64_t nb;      // true blocks per row
    int64_t nb_pad;  // nb rounded up to even
    bool pairs;      // qs in pair order (gemv on Q4 weights)

    int8_t* qs_row(int64_t r) const { return qs + r * nb_pad * 32; }
    float* ds_row(int64_t r) const { return ds + r * nb_pad * 2; }
    int32_t* corr_row(int64_t r) const { return corr + r * nb_pad; }
    // The same arrays starting at row r.
    QuantActs from_row(int64_t r) const { return {qs_row(r), ds_row(r), corr_row(r), nb, nb_pad, pairs}; }
    // Bytes of scratch for `rows` rows of `nb` blocks (plus alignment slack).
    static size_t bytes(int64_t rows, int64_t nb) { return size_t(rows) * ((nb + 1) / 2 * 2) * 44 + 128; }
    // Lays the arrays out in `scratch` (at least bytes(rows, nb)).
    static QuantActs in(uint8_t* scratch, int64_t rows, int64_t nb, bool pairs) {
        const int64_t nb_pad = (nb + 1) / 2 * 2;
        auto* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch) + 63) & ~uintptr_t(63));
        auto* qs = reinterpret_cast<int8_t*>(base);
        auto* ds = reinterpret_cast<float*>(base + rows * nb_pad * 32);
        auto* corr = reinterpret_cast<int32_t*>(ds + rows * nb_pad * 2);
        return {qs, ds, corr, nb, nb_pad, pairs};
    }
};

// Quantizes fp32 row r (in_dim = a.nb * 32 values) into `a`, for weights of type `w`.
using PrepareRowFn = void (*)(const float* x, const QuantActs& a, int64_t r, kernels::GgmlType w);
// y[r * y_stride + o] = dot(weight row o, activation row r) (+ bias[o]) for o in [o_begin, o_end),
// r < num_rows <= 4. w points at weight row 0; rows are w_row_bytes apart.
using GemvFn = void (*)(const uint8_t* w, size_t w_row_bytes, int64_t o_begin, int64_t o_end, const QuantActs& a,
                        int num_rows, float* y, int64_t y_stride, const float* bias);
// Repacks weight rows [0, num_w_rows) (num_w_rows <= kGemmTileRows) into `packed`
// (kGemmTileRows * nb * kPackedBytesPerRowBlock bytes, 64-aligned).
using PackTileFn = void (*)(const uint8_t* w, size_t w_row_bytes, int num_w_rows, int64_t nb, uint8_t* packed);
// y[r * y_stride + o] for activation rows [r_begin, r_end) and the tile's rows o < num_w_rows
// (y points at the tile's first output column), plus bias (indexed from the tile's first row).
using GemmTileFn = void (*)(const uint8_t* packed, int64_t nb, const QuantActs& a, int64_t r_begin, int64_t r_end,
                            float* y, int64_t y_stride, int num_w_rows, const float* bias);

constexpr int kGemmTileRows = 32;
constexpr size_t kPackedBytesPerRowBlock = 40;  // 32 u8 values + fp32 d and m

// Q4_0/Q4_1/Q8_0 weights repacked once at load (Backend::prepare_weight) with lanes = rows, in
// groups of 16 weight rows; per group and block, 64-byte vectors where vector t holds, for each
// of the 16 rows, the block's qs bytes [4t, 4t + 4): Q4 four vectors (low nibbles: values
// 4t..4t+3, high nibbles: values 16+4t..16+4t+3), Q8_0 eight vectors of q + 128 (u8, as
// vpdpbusd takes them; the -128 goes into the activation's per-block correction); then the 16
// fp16 d, then (Q4_1) the 16 fp16 m. Groups are contiguous ([group][block]); rows past out_dim
// are zero (d = 0). The same bytes per weight as GGUF, but a decode step takes 16 rows per
// instruction instead of unpacking scales per block and row.
constexpr int kR16Rows = 16;
inline size_t r16_block_bytes(kernels::GgmlType w) {
    return w == kernels::GgmlType::kQ4_1 ? 320 : w == kernels::GgmlType::kQ8_0 ? 544 : 288;
}
inline int64_t r16_groups(int64_t out_dim) { return (out_dim + kR16Rows - 1) / kR16Rows; }
inline size_t r16_bytes(kernels::GgmlType w, int64_t out_dim, int64_t nb) {
    return size_t(r16_groups(out_dim)) * size_t(nb) * r16_block_bytes(w);
}
inline bool has_r16(kernels::GgmlType) { return true; }

// Repacks GGUF rows (out_dim rows of w_row_bytes) into `dst` (r16_bytes, any alignment).
using RepackR16Fn = void (*)(const uint8_t* w, size_t w_row_bytes, int64_t out_dim, int64_t nb, uint8_t* dst);
// y[r * y_stride + o] = dot(row o, activation row r) (+ bias[o]) for the rows o of groups
// [g_begin, g_end) below out_dim, r < num_rows <= 4 (activations in natural order).
using GemvR16Fn = void (*)(const uint8_t* r16, int64_t nb, int64_t g_begin, int64_t g_end, int64_t out_dim,
                           const QuantActs& a, int num_rows, float* y, int64_t y_stride, const float* bias);
// Unpacks groups [2 * tile, 2 * tile + 2) of a repacked matrix (num_groups in all) into the gemm
// tile layout PackTileFn writes.
using PackTileR16Fn = void (*)(const uint8_t* r16, int64_t nb, int64_t tile, int64_t num_groups, uint8_t* packed);

struct QuantGemmKernels {
    PrepareRowFn prepare_row;
    // Indexed by kind(): Q4_0, Q4_1, Q8_0.
    GemvFn gemv[3];
    PackTileFn pack[3];
    GemmTileFn gemm_tile[3];
    // Repacked weights (nullptr where the set has none).
    RepackR16Fn repack_r16[3];
    GemvR16Fn gemv_r16[3];
    PackTileR16Fn pack_from_r16[3];

    static int kind(kernels::GgmlType w) {
        return w == kernels::GgmlType::kQ4_0 ? 0 : w == kernels::GgmlType::kQ4_1 ? 1 : 2;
    }
};

}  // namespace lazyattn::backend::cpu::simd
