// SwiGLU over a run of floats: out = silu(gate) * up = gate / (1 + exp(-gate)) * up, with one
// vector exp per 16 elements (prefill spends several percent in a scalar expf otherwise).
#pragma once

#include <cstdint>

namespace lazyattn::backend::cpu::simd {

using SwigluFn = void (*)(const float* gate, const float* up, float* out, int64_t n);

// The AVX-512 kernel, or nullptr where the CPU lacks AVX-512F (or LAZYATTN_CPU_ISA caps it).
SwigluFn swiglu_kernel();

}  // namespace lazyattn::backend::cpu::simd
