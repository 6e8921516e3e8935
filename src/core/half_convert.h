// Bulk conversion between fp32 and the 16-bit formats the KV cache can be stored in, using F16C /
// AVX-512 where the CPU has them (checked at run time) and core/fp16.h otherwise. Results are
// bit-identical to fp32_to_fp16 / fp32_to_bf16 (round to nearest even) and their inverses.
#pragma once

#include <cstdint>

namespace lazyattn {

enum class CpuIsa;  // core/cpu_features.h

void fp16_to_fp32_n(const uint16_t* src, float* dst, int64_t n);
void fp32_to_fp16_n(const float* src, uint16_t* dst, int64_t n);
void bf16_to_fp32_n(const uint16_t* src, float* dst, int64_t n);
void fp32_to_bf16_n(const float* src, uint16_t* dst, int64_t n);

// The instruction set the conversions above use (cpu_features(), so LAZYATTN_CPU_ISA caps it).
CpuIsa half_convert_isa();

}  // namespace lazyattn
