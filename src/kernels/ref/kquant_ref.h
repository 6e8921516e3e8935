// Scalar reference of the matmul on the weight types beyond Q4_0/Q4_1/Q8_0 (quant_ref.h):
// Q5_0/Q5_1 (with Q8_0/Q8_1 activations), the K-quants Q2_K..Q6_K (with Q8_K activations) and
// F16/BF16 (with fp32 activations). Written from the GGUF block layouts; the tests check them
// against loader/dequantize.cpp (the gguf-py-identical truth) and the SIMD kernels against them.
//
// Every K-quant super-block is first brought to one common form, KUnpacked, whose dot product
// with a Q8_K block is
//   d * dx * sum_k scale[k] * sum_{i in group k} q[i] * x[i]  -  dmin * dx * sum_k min[k] * bsums[k]
// over 16 groups of 16 elements, with q unsigned (0..63) so that u8 x s8 instructions take it.
// Signed formats move their offset into `min` (Q6_K: q + 32 with min = 32 * scale, dmin = d).
// The integer sums are exact, so SIMD kernels built on the same form agree to the last bit
// of the float accumulation order.
#pragma once

#include <cstdint>

#include "kernels/params/matmul_params.h"
#include "kernels/params/quant_blocks.h"

namespace lazyattn::kernels::ref {

struct KUnpacked {
    alignas(32) uint8_t q[256];  // 0..63
    alignas(32) int16_t scale[16];
    alignas(32) int16_t min[16];
    float d;
    float dmin;
};

// Unpacks one GGUF super-block of `type` (Q2_K..Q6_K).
void unpack_q2_K(const uint8_t* b, KUnpacked* u);
void unpack_q3_K(const uint8_t* b, KUnpacked* u);
void unpack_q4_K(const uint8_t* b, KUnpacked* u);
void unpack_q5_K(const uint8_t* b, KUnpacked* u);
void unpack_q6_K(const uint8_t* b, KUnpacked* u);
using UnpackFn = void (*)(const uint8_t* b, KUnpacked* u);
// Q4_K/Q5_K: the 6-bit scale and min of sub-block j (0..7) from the 12 packed scale bytes.
void k4_scale_min(const uint8_t* s, int j, int* scale, int* min);
UnpackFn unpack_function(GgmlType type);  // nullptr for a non-K type

// The super-block's term of the dot product (the formula above), in a fixed float order.
float dot_unpacked(const KUnpacked& u, const BlockQ8_K& x);
// Integer parts of it: sum_k scale[k] * dot(group k) and sum_k min[k] * bsums[k].
void dot_unpacked_ints(const KUnpacked& u, const BlockQ8_K& x, int32_t* isum, int32_t* msum);
inline float combine_kquant(const KUnpacked& u, float dx, int32_t isum, int32_t msum) {
    return dx * u.d * float(isum) - dx * u.dmin * float(msum);
}

// n a multiple of 256. Per block: the element of largest magnitude `max` maps to -127, d =
// -max / 127, q = min(127, round-half-even(x / d)); bsums as above. All-zero blocks get d = 0.
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n);

// The activation format of a weight type.
enum class ActFormat { kF32, kQ8_0, kQ8_1, kQ8_K };
ActFormat activation_format(GgmlType type);
// Bytes of one activation row of n elements in that format.
size_t activation_row_bytes(GgmlType type, int64_t n);
// Quantizes (or copies) one fp32 row of n elements into the format.
void prepare_activation_row(GgmlType type, const float* x, void* y, int64_t n);

// Dot product of one weight row (n elements) of `type` with one activation row in its format.
// Covers every GgmlType except kF32.
float vec_dot_typed(GgmlType type, const void* w_row, const void* x_row, int64_t n);

// y[r, o] = dot(w row o, x row r) for any type but kF32; x fp32 [num_rows, in_dim].
void typed_matmul(GgmlType type, const void* w, const float* x, float* y, int64_t num_rows, int64_t in_dim,
                  int64_t out_dim);

}  // namespace lazyattn::kernels::ref
