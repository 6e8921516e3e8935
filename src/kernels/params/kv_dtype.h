// Element types of the KV cache, and moving values between them and fp32. Keys and values are
// computed in fp32 and converted once when stored (rounded, or quantized); kernels widen them back
// to fp32 as they read, so no read ever quantizes.
//
// q8_0 and q4_0 are llama.cpp's block formats (kernels/params/quant_blocks.h): 32 consecutive
// values along the head dimension share one fp16 scale, so a row of head_dim values is
// head_dim / 32 blocks and rows stay byte-contiguous. A run of n values (n a multiple of 32,
// starting on a row) therefore converts in one call, exactly as for the 16-bit types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lazyattn::kernels {

enum class KvDtype : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2, kQ8_0 = 3, kQ4_0 = 4 };

// The K and V element types of one pool (llama.cpp's -ctk / -ctv may differ).
struct KvTypes {
    KvDtype k = KvDtype::kF32;
    KvDtype v = KvDtype::kF32;
    // Written out: the CUDA sources include this header and compile as C++17.
    bool operator==(const KvTypes& o) const { return k == o.k && v == o.v; }
    bool operator!=(const KvTypes& o) const { return !(*this == o); }
};
constexpr KvTypes same_kv_types(KvDtype t) { return {t, t}; }

constexpr bool kv_dtype_quantized(KvDtype t) { return t == KvDtype::kQ8_0 || t == KvDtype::kQ4_0; }
// Values that share a scale (1 for the plain types): head_dim must be a multiple of it.
constexpr int64_t kv_dtype_group(KvDtype t) { return kv_dtype_quantized(t) ? 32 : 1; }

// Bytes of n consecutive values, scales included (a partial group would take a whole block:
// never zero for n > 0, though a pool refuses head dims its groups do not divide).
constexpr int64_t kv_bytes(KvDtype t, int64_t n) {
    switch (t) {
        case KvDtype::kF32:
            return 4 * n;
        case KvDtype::kF16:
        case KvDtype::kBF16:
            return 2 * n;
        case KvDtype::kQ8_0:
            return (n + 31) / 32 * 34;  // BlockQ8_0: fp16 scale + 32 int8
        case KvDtype::kQ4_0:
            return (n + 31) / 32 * 18;  // BlockQ4_0: fp16 scale + 16 bytes of nibbles
    }
    return 0;
}

// The one list of names: "f32", "f16", "bf16", "q8_0", "q4_0".
const char* kv_dtype_name(KvDtype t);
// The name, or nothing for a name that is not one of them.
std::optional<KvDtype> parse_kv_dtype(std::string_view name);
// "q8_0" when K and V agree, else "K q8_0, V f16".
std::string kv_types_name(const KvTypes& t);

// n values of `dtype` at src -> fp32 (n a multiple of kv_dtype_group(dtype)).
void kv_to_f32(const void* src, KvDtype dtype, float* dst, int64_t n);
// n fp32 values -> `dtype` at dst: round to nearest even for the 16-bit types; for q8_0 and q4_0
// llama.cpp's reference quantizers (per 32 values, scale amax / 127 and max / -8).
void f32_to_kv(const float* src, KvDtype dtype, void* dst, int64_t n);

}  // namespace lazyattn::kernels
