// Reference quantizers (see quantize.h for the error bounds). Each block's scale is rounded to
// fp16 first and the quants are computed against the rounded value, so the stored scale is the
// one the error bound is stated in.
#include "loader/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/check.h"
#include "core/fp16.h"

namespace lazyattn::loader {

namespace {

constexpr int kQK = 32;

void store_half(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, sizeof h);
}

float rounded_half(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

int clamp_round(float v, int lo, int hi) {
    const float r = std::nearbyint(v);
    if (!(r >= static_cast<float>(lo))) return lo;  // also maps NaN to lo
    if (r > static_cast<float>(hi)) return hi;
    return static_cast<int>(r);
}

// The element of largest magnitude, with its sign (the symmetric formats map it to -2^(b-1)).
float signed_absmax(const float* x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, float* mn, float* mx) {
    *mn = x[0];
    *mx = x[0];
    for (int j = 1; j < kQK; ++j) {
        *mn = std::min(*mn, x[j]);
        *mx = std::max(*mx, x[j]);
    }
}

// Packs 32 quants of up to 4 bits as ggml does: element j in the low nibble of byte j, element
// j + 16 in the high nibble.
void pack_nibbles(const int* q, uint8_t* qs) {
    for (int j = 0; j < kQK / 2; ++j) {
        qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
    }
}

// The fifth bits of 32 quants: bit j of the little-endian u32 is bit 4 of element j.
void pack_high_bits(const int* q, uint8_t* qh) {
    uint32_t bits = 0;
    for (int j = 0; j < kQK; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    std::memcpy(qh, &bits, sizeof bits);
}

// Symmetric b-bit block: d = max / -(2^(b-1)), q = round(x / d) + 2^(b-1) in [0, 2^b - 1].
void quantize_symmetric_block(const float* x, int bits, float* d_out, int* q) {
    const int offset = 1 << (bits - 1);
    const float d = rounded_half(signed_absmax(x) / static_cast<float>(-offset));
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) q[j] = clamp_round(x[j] * id + static_cast<float>(offset), 0, 2 * offset - 1);
    *d_out = d;
}

// Affine b-bit block: m = min, d = (max - min) / (2^b - 1), q = round((x - m) / d).
void quantize_affine_block(const float* x, int bits, float* d_out, float* m_out, int* q) {
    const int qmax = (1 << bits) - 1;
    float mn, mx;
    min_max(x, &mn, &mx);
    const float m = rounded_half(mn);
    const float d = rounded_half((mx - mn) / static_cast<float>(qmax));
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) q[j] = clamp_round((x[j] - m) * id, 0, qmax);
    *d_out = d;
    *m_out = m;
}

}  // namespace

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    LA_CHECK(n % kQK == 0);
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t b = 0; b < n / kQK; ++b, out += 34) {
        const float* x = src + b * kQK;
        const float d = rounded_half(std::fabs(signed_absmax(x)) / 127.0f);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(out, d);
        for (int j = 0; j < kQK; ++j) {
            out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(clamp_round(x[j] * id, -127, 127)));
        }
    }
}

void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
    LA_CHECK(n % kQK == 0);
    auto* out = static_cast<uint8_t*>(dst);
    int q[kQK];
    for (int64_t b = 0; b < n / kQK; ++b, out += 18) {
        float d;
        quantize_symmetric_block(src + b * kQK, 4, &d, q);
        store_half(out, d);
        pack_nibbles(q, out + 2);
    }
}

void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
    LA_CHECK(n % kQK == 0);
    auto* out = static_cast<uint8_t*>(dst);
    int q[kQK];
    for (int64_t b = 0; b < n / kQK; ++b, out += 20) {
        float d, m;
        quantize_affine_block(src + b * kQK, 4, &d, &m, q);
        store_half(out, d);
        store_half(out + 2, m);
        pack_nibbles(q, out + 4);
    }
}

void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
    LA_CHECK(n % kQK == 0);
    auto* out = static_cast<uint8_t*>(dst);
    int q[kQK];
    for (int64_t b = 0; b < n / kQK; ++b, out += 22) {
        float d;
        quantize_symmetric_block(src + b * kQK, 5, &d, q);
        store_half(out, d);
        pack_high_bits(q, out + 2);
        pack_nibbles(q, out + 6);
    }
}

void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
    LA_CHECK(n % kQK == 0);
    auto* out = static_cast<uint8_t*>(dst);
    int q[kQK];
    for (int64_t b = 0; b < n / kQK; ++b, out += 24) {
        float d, m;
        quantize_affine_block(src + b * kQK, 5, &d, &m, q);
        store_half(out, d);
        store_half(out + 2, m);
        pack_high_bits(q, out + 4);
        pack_nibbles(q, out + 8);
    }
}

Expected<std::vector<uint8_t>> quantize(GgmlType type, const float* src, int64_t n) {
    const GgmlTypeTraits traits = ggml_type_traits(type);
    using RowFn = void (*)(const float*, void*, int64_t);
    RowFn fn = nullptr;
    switch (type) {
        case GgmlType::kF32:
        case GgmlType::kF16:
        case GgmlType::kBF16:
            break;
        case GgmlType::kQ8_0:
            fn = quantize_row_q8_0;
            break;
        case GgmlType::kQ4_0:
            fn = quantize_row_q4_0;
            break;
        case GgmlType::kQ4_1:
            fn = quantize_row_q4_1;
            break;
        case GgmlType::kQ5_0:
            fn = quantize_row_q5_0;
            break;
        case GgmlType::kQ5_1:
            fn = quantize_row_q5_1;
            break;
        case GgmlType::kQ2_K:
            fn = quantize_row_q2_K;
            break;
        case GgmlType::kQ3_K:
            fn = quantize_row_q3_K;
            break;
        case GgmlType::kQ4_K:
            fn = quantize_row_q4_K;
            break;
        case GgmlType::kQ5_K:
            fn = quantize_row_q5_K;
            break;
        case GgmlType::kQ6_K:
            fn = quantize_row_q6_K;
            break;
        default:
            return unsupported(std::string("no quantizer for ggml type ") + traits.name);
    }
    if (n < 0 || n % traits.block_size != 0) {
        return invalid_argument("quantize " + std::string(traits.name) + ": " + std::to_string(n) +
                                " elements is not a multiple of the block size");
    }
    std::vector<uint8_t> out(ggml_row_size(type, n));
    if (fn != nullptr) {
        fn(src, out.data(), n);
    } else if (type == GgmlType::kF32) {
        std::memcpy(out.data(), src, out.size());
    } else {
        for (int64_t i = 0; i < n; ++i) {
            const uint16_t h = type == GgmlType::kF16 ? fp32_to_fp16(src[i]) : fp32_to_bf16(src[i]);
            std::memcpy(out.data() + 2 * i, &h, sizeof h);
        }
    }
    return out;
}

}  // namespace lazyattn::loader
