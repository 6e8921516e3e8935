// Element type of the KV cache, and moving values between it and fp32. Keys and values are
// computed in fp32 and rounded once when stored; kernels widen them back to fp32 as they read.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/half_convert.h"

namespace lazyattn::kernels {

enum class KvDtype : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2 };

inline int64_t kv_dtype_bytes(KvDtype t) { return t == KvDtype::kF32 ? 4 : 2; }

// n values of `dtype` at src -> fp32.
inline void kv_to_f32(const void* src, KvDtype dtype, float* dst, int64_t n) {
    switch (dtype) {
        case KvDtype::kF32:
            std::memcpy(dst, src, sizeof(float) * size_t(n));
            break;
        case KvDtype::kF16:
            fp16_to_fp32_n(static_cast<const uint16_t*>(src), dst, n);
            break;
        case KvDtype::kBF16:
            bf16_to_fp32_n(static_cast<const uint16_t*>(src), dst, n);
            break;
    }
}

// n fp32 values -> `dtype` at dst (round to nearest even).
inline void f32_to_kv(const float* src, KvDtype dtype, void* dst, int64_t n) {
    switch (dtype) {
        case KvDtype::kF32:
            std::memcpy(dst, src, sizeof(float) * size_t(n));
            break;
        case KvDtype::kF16:
            fp32_to_fp16_n(src, static_cast<uint16_t*>(dst), n);
            break;
        case KvDtype::kBF16:
            fp32_to_bf16_n(src, static_cast<uint16_t*>(dst), n);
            break;
    }
}

}  // namespace lazyattn::kernels
