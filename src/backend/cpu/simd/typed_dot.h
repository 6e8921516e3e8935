// Row dot-product kernels for the weight types without a register-tiled kernel (quant_gemm.h):
// Q5_0, Q5_1, the K-quants Q2_K..Q6_K and F16/BF16, computed on the GGUF bytes as they lie in
// the mapped file (never widened to fp32 in memory). One function per type and instruction set;
// each takes up to kMaxDotRows activation rows so a weight row that is decoded once serves
// several rows (prefill). Activations are in the type's format (kernels/ref/kquant_ref.h):
// Q8_0 (Q5_0), Q8_1 (Q5_1), Q8_K (K-quants) or fp32 (F16, BF16).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/params/matmul_params.h"

namespace lazyattn::backend::cpu::simd {

// out[r] = dot(w_row, activation row at x + r * x_stride) for r < rows (<= 4), n elements.
using TypedDotFn = void (*)(const void* w_row, const uint8_t* x, size_t x_stride, int rows, int64_t n, float* out);

// Prefill tiles (lanes = weight rows): a tile of kTypedTileRows weight rows is brought once into
// a kernel-specific form in thread-local memory (pack), then every activation row of the task
// streams past it (gemm). y[r * y_stride + o] = dot(weight row o, activation row r) (+ bias[o])
// for r < rows and o < num_w_rows; y and bias point at the tile's first output column.
constexpr int kTypedTileRows = 16;
using TypedPackFn = void (*)(const uint8_t* w, size_t w_row_bytes, int num_w_rows, int64_t n, uint8_t* packed);
using TypedTileFn = void (*)(const uint8_t* packed, int64_t n, const uint8_t* x, size_t x_stride, int64_t rows,
                             float* y, int64_t y_stride, int num_w_rows, const float* bias);
struct TypedTile {
    TypedPackFn pack;
    TypedTileFn gemm;
    size_t (*packed_bytes)(int64_t n);  // bytes `pack` writes for rows of n elements
};

// K-quants repacked at load (kernels/ref/kquant_r16_ref.h: groups of 16 rows, lanes = rows).
struct TypedR16 {
    // y[r * y_stride + o] = dot(row o, Q8_K activation row r at x + r * x_stride) (+ bias[o]) for
    // the rows o of groups [g_begin, g_end) below out_dim, r < rows <= 4; rows of n elements.
    void (*gemv)(const uint8_t* r16, int64_t n, int64_t g_begin, int64_t g_end, int64_t out_dim, const uint8_t* x,
                 size_t x_stride, int rows, float* y, int64_t y_stride, const float* bias);
    // Group g (rows [16g, 16g + 16)) in the layout the type's TypedTile::pack writes, for its gemm.
    void (*pack_tile)(const uint8_t* r16, int64_t n, int64_t g, uint8_t* packed);
};

struct TypedDotKernels {
    TypedDotFn q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, f16, bf16;
    // The prefill tile kernels of a type, or nullptr (then prefill runs the row dots).
    const TypedTile* (*tile)(kernels::GgmlType t) = nullptr;
    // Quantizes one fp32 row to Q8_K blocks exactly as kernels::ref::quantize_row_q8_K does, or
    // nullptr (then the reference runs).
    void (*quantize_q8_k)(const float* x, void* y, int64_t n) = nullptr;
    // The kernels on weights repacked at load, or nullptr (then the weight stays as in the file).
    const TypedR16* (*r16)(kernels::GgmlType t) = nullptr;

    TypedDotFn get(kernels::GgmlType t) const {
        using W = kernels::GgmlType;
        switch (t) {
            case W::kQ5_0:
                return q5_0;
            case W::kQ5_1:
                return q5_1;
            case W::kQ2_K:
                return q2_k;
            case W::kQ3_K:
                return q3_k;
            case W::kQ4_K:
                return q4_k;
            case W::kQ5_K:
                return q5_k;
            case W::kQ6_K:
                return q6_k;
            case W::kF16:
                return f16;
            case W::kBF16:
                return bf16;
            default:
                return nullptr;
        }
    }
};

extern const TypedDotKernels kScalarTypedDots;
extern const TypedDotKernels kAvx2TypedDots;
extern const TypedDotKernels kAvx512TypedDots;

}  // namespace lazyattn::backend::cpu::simd
