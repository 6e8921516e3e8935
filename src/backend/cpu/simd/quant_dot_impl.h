// The kernel sets defined in the simd/ translation units (one per instruction set).
#pragma once

#include "backend/cpu/simd/quant_dot.h"

namespace lazyattn::backend::cpu::simd {

extern const QuantKernels kScalarKernels;
extern const QuantKernels kAvx2Kernels;
extern const QuantKernels kAvx512VnniKernels;
extern const QuantGemmKernels kAvx512GemmKernels;

}  // namespace lazyattn::backend::cpu::simd
