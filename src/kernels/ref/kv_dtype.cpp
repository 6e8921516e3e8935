// The KV element types' names and conversions (kernels/params/kv_dtype.h). The quantized ones
// are the weight formats' blocks: read by the weights' reference dequantizer (dequantize_ref.h)
// and written by the activations' q8_0 quantizer (quant_ref.h) or llama.cpp's reference q4_0
// rule below, so a q8_0 or q4_0 KV row is bit for bit a llama.cpp row.
#include "kernels/params/kv_dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/fp16.h"
#include "core/half_convert.h"
#include "kernels/params/quant_blocks.h"
#include "kernels/ref/dequantize_ref.h"
#include "kernels/ref/quant_ref.h"

namespace lazyattn::kernels {
namespace {

constexpr struct {
    KvDtype type;
    const char* name;
} kNames[] = {{KvDtype::kF32, "f32"},
              {KvDtype::kF16, "f16"},
              {KvDtype::kBF16, "bf16"},
              {KvDtype::kQ8_0, "q8_0"},
              {KvDtype::kQ4_0, "q4_0"}};

// llama.cpp's reference q4_0 quantizer: the value of largest magnitude maps to -8 exactly, so
// its sign is kept and the other 15 levels spread over the rest.
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 32) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; ++j) {
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < 16; ++j) {
            const int lo = std::min(15, int(int8_t(x[j] * id + 8.5f)));
            const int hi = std::min(15, int(int8_t(x[j + 16] * id + 8.5f)));
            y[i].qs[j] = uint8_t(lo | (hi << 4));
        }
    }
}

}  // namespace

const char* kv_dtype_name(KvDtype t) {
    for (const auto& n : kNames) {
        if (n.type == t) return n.name;
    }
    return "?";
}

std::optional<KvDtype> parse_kv_dtype(std::string_view name) {
    for (const auto& n : kNames) {
        if (name == n.name) return n.type;
    }
    return std::nullopt;
}

std::string kv_types_name(const KvTypes& t) {
    if (t.k == t.v) return kv_dtype_name(t.k);
    return std::string("K ") + kv_dtype_name(t.k) + ", V " + kv_dtype_name(t.v);
}

void kv_to_f32(const void* src, KvDtype dtype, float* dst, int64_t n) {
    LA_DCHECK(n % kv_dtype_group(dtype) == 0);
    switch (dtype) {
        case KvDtype::kF32:
            std::memcpy(dst, src, sizeof(float) * size_t(n));
            return;
        case KvDtype::kF16:
            fp16_to_fp32_n(static_cast<const uint16_t*>(src), dst, n);
            return;
        case KvDtype::kBF16:
            bf16_to_fp32_n(static_cast<const uint16_t*>(src), dst, n);
            return;
        case KvDtype::kQ8_0:
            LA_CHECK(ref::dequantize_row(GgmlType::kQ8_0, src, dst, n).ok());
            return;
        case KvDtype::kQ4_0:
            LA_CHECK(ref::dequantize_row(GgmlType::kQ4_0, src, dst, n).ok());
            return;
    }
}

void f32_to_kv(const float* src, KvDtype dtype, void* dst, int64_t n) {
    LA_DCHECK(n % kv_dtype_group(dtype) == 0);
    switch (dtype) {
        case KvDtype::kF32:
            std::memcpy(dst, src, sizeof(float) * size_t(n));
            return;
        case KvDtype::kF16:
            fp32_to_fp16_n(src, static_cast<uint16_t*>(dst), n);
            return;
        case KvDtype::kBF16:
            fp32_to_bf16_n(src, static_cast<uint16_t*>(dst), n);
            return;
        case KvDtype::kQ8_0:
            ref::quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n);
            return;
        case KvDtype::kQ4_0:
            quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), n / 32);
            return;
    }
}

}  // namespace lazyattn::kernels
