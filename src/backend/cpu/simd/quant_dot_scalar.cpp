// Portable quantized kernels: the scalar reference, row by row.
#include "backend/cpu/simd/quant_dot_impl.h"
#include "kernels/ref/kquant_ref.h"
#include "kernels/ref/quant_ref.h"

namespace lazyattn::backend::cpu::simd {
namespace {

template <kernels::GgmlType W>
void dot_rows_scalar(const void* w, const uint8_t* x, size_t stride, int rows, int64_t nb, float* out) {
    for (int r = 0; r < rows; ++r) out[r] = kernels::ref::vec_dot(W, w, x + r * stride, nb * kernels::kQuantBlock);
}

void quantize_q8_0_scalar(const float* x, void* y, int64_t n) {
    kernels::ref::quantize_row_q8_0(x, static_cast<kernels::BlockQ8_0*>(y), n);
}
void quantize_q8_1_scalar(const float* x, void* y, int64_t n) {
    kernels::ref::quantize_row_q8_1(x, static_cast<kernels::BlockQ8_1*>(y), n);
}

template <kernels::GgmlType W>
void typed_rows_scalar(const void* w, const uint8_t* x, size_t stride, int rows, int64_t n, float* out) {
    for (int r = 0; r < rows; ++r) out[r] = kernels::ref::vec_dot_typed(W, w, x + r * stride, n);
}

}  // namespace

using kernels::GgmlType;
const TypedDotKernels kScalarTypedDots = {
    typed_rows_scalar<GgmlType::kQ5_0>, typed_rows_scalar<GgmlType::kQ5_1>, typed_rows_scalar<GgmlType::kQ2_K>,
    typed_rows_scalar<GgmlType::kQ3_K>, typed_rows_scalar<GgmlType::kQ4_K>, typed_rows_scalar<GgmlType::kQ5_K>,
    typed_rows_scalar<GgmlType::kQ6_K>, typed_rows_scalar<GgmlType::kF16>,  typed_rows_scalar<GgmlType::kBF16>,
};

const QuantKernels kScalarKernels = {
    "scalar",
    dot_rows_scalar<kernels::GgmlType::kQ4_0>,
    dot_rows_scalar<kernels::GgmlType::kQ4_1>,
    dot_rows_scalar<kernels::GgmlType::kQ8_0>,
    quantize_q8_0_scalar,
    quantize_q8_1_scalar,
    nullptr,
    &kScalarTypedDots,
};

}  // namespace lazyattn::backend::cpu::simd
