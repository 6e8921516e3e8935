// Quantized dot-product kernels, chosen once at run time for the CPU: AVX-512 VNNI, AVX2+FMA or
// portable scalar code, so one binary runs on any x86-64 and uses the best path it finds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/simd/quant_gemm.h"
#include "backend/cpu/simd/typed_dot.h"
#include "kernels/params/quant_blocks.h"

namespace lazyattn::backend::cpu::simd {

// out[r] = dot(w_row, x + r * x_stride) for r < num_x_rows (at most kMaxDotRows), over nb blocks.
using DotRowsFn = void (*)(const void* w_row, const uint8_t* x, size_t x_stride, int num_x_rows, int64_t nb,
                           float* out);
// Quantizes one fp32 row of n elements (a multiple of 32) to Q8_0 or Q8_1 blocks.
using QuantizeRowFn = void (*)(const float* x, void* y, int64_t n);

constexpr int kMaxDotRows = 4;

struct QuantKernels {
    const char* isa;  // "avx512vnni", "avx2" or "scalar"
    DotRowsFn dot_q4_0;
    DotRowsFn dot_q4_1;
    DotRowsFn dot_q8_0;
    QuantizeRowFn quantize_q8_0;
    QuantizeRowFn quantize_q8_1;
    // The register-tiled gemv/gemm kernels (quant_gemm.h), or nullptr where the set has none.
    const QuantGemmKernels* gemm;
    // Q5_0/Q5_1, K-quants, F16/BF16 (typed_dot.h).
    const TypedDotKernels* typed;

    DotRowsFn dot(kernels::GgmlType w) const {
        return w == kernels::GgmlType::kQ4_0 ? dot_q4_0 : w == kernels::GgmlType::kQ4_1 ? dot_q4_1 : dot_q8_0;
    }
};

// The best kernels this CPU supports (detected once).
const QuantKernels& quant_kernels();
// Every kernel set this CPU can run, best first (for tests that compare them).
int num_quant_kernel_sets();
const QuantKernels& quant_kernel_set(int index);

}  // namespace lazyattn::backend::cpu::simd
