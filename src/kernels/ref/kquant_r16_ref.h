// Q4_K, Q5_K and Q6_K weights repacked at load for decode (the CPU backend does this on AVX-512
// VNNI hosts, through Backend::prepare_weight): rows in groups of 16 with lanes = rows, so that
// one 512-bit vpdpbusd multiplies 4 consecutive weights of 16 rows with one broadcast 4-byte
// activation word, and a 16-row group needs no per-row unpacking of scales.
//
// Per group and super-block (256 weights per row), a *main* part: every 4-byte word of the GGUF
// quant bytes transposed, 64-byte vector j holding word j of the 16 rows (row i at bytes
// [4i, 4i + 4)), then the scales unpacked to bytes, [group][row]; and a *tail* of the fp16
// factors d (and dmin), [row]. A group is `nsb` main parts back to back, then `nsb` tails (then
// padding to 64 bytes), so every vector stays 64-byte aligned. Rows past out_dim are zero (d = 0).
//
//   Q4_K main 2304 = [0, 2048) 32 vectors of qs words: vector 8c + t holds qs bytes
//                    [32c + 4t, 32c + 4t + 4): low nibbles elements 64c + 4t + [0, 4), high
//                    nibbles 64c + 32 + 4t + [0, 4);
//                    [2048, 2176) scales u8 [8 groups of 32][16 rows];
//                    [2176, 2304) mins u8 [4 group pairs][16 rows][2];
//        tail   64 = d fp16 [16], dmin fp16 [16]                        (2368 vs 16 x 144 = 2304)
//   Q5_K main 2816 = the Q4_K qs vectors, [2048, 2560) 8 vectors of qh words (qh bytes
//                    [4t, 4t + 4): bit 2c / 2c + 1 = fifth bit of the low / high nibble of qs
//                    vector 8c + t), then scales and mins as Q4_K;
//        tail   64 = as Q4_K                                            (2880 vs 16 x 176 = 2816)
//   Q6_K main 3328 = [0, 2048) 32 vectors of ql words, [2048, 3072) 16 vectors of qh words,
//                    [3072, 3328) scales i8 [16 groups of 16][16 rows];
//        tail   32 = d fp16 [16]                                        (3360 = 16 x 210)
//
// Functions here are the scalar definition of the layout: the repack the backend runs, and a
// reading of it back into the common form (kquant_ref.h) that tests compare with the GGUF bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/params/matmul_params.h"
#include "kernels/params/quant_blocks.h"
#include "kernels/ref/kquant_ref.h"

namespace lazyattn::kernels::ref {

constexpr int kR16KRows = 16;

// True for the types with this layout (Q4_K, Q5_K, Q6_K).
bool has_kquant_r16(GgmlType t);
size_t kquant_r16_main_bytes(GgmlType t);  // per group and super-block
size_t kquant_r16_tail_bytes(GgmlType t);
// A group is rounded up to 64 bytes (Q6_K with an odd number of super-blocks: 32 more).
inline size_t kquant_r16_group_bytes(GgmlType t, int64_t n) {
    return (size_t(n / kSuperBlock) * (kquant_r16_main_bytes(t) + kquant_r16_tail_bytes(t)) + 63) / 64 * 64;
}
inline int64_t kquant_r16_groups(int64_t out_dim) { return (out_dim + kR16KRows - 1) / kR16KRows; }
inline size_t kquant_r16_bytes(GgmlType t, int64_t out_dim, int64_t n) {
    return size_t(kquant_r16_groups(out_dim)) * kquant_r16_group_bytes(t, n);
}

// Repacks groups [g_begin, g_end) of a matrix of out_dim GGUF rows (w_row_bytes apart, n
// elements each) into dst (the whole matrix's buffer, kquant_r16_bytes).
void repack_kquant_r16(GgmlType t, const uint8_t* w, size_t w_row_bytes, int64_t out_dim, int64_t n, int64_t g_begin,
                       int64_t g_end, uint8_t* dst);

// Row `row`, super-block `sb` of a repacked matrix, in the common form.
void unpack_kquant_r16(GgmlType t, const uint8_t* r16, int64_t n, int64_t row, int64_t sb, KUnpacked* u);

// y[o] = dot(row o, x) for o < out_dim on the repacked matrix (x: n / 256 Q8_K blocks).
void gemv_kquant_r16(GgmlType t, const uint8_t* r16, int64_t n, int64_t out_dim, const BlockQ8_K* x, float* y);

}  // namespace lazyattn::kernels::ref
