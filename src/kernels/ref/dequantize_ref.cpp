// Scalar dequantization, one function per block layout. Each is written from the layout of the
// ggml block struct (ggml-common.h) and states, per element, which bits it reads: slow and
// obvious on purpose, since the optimised kernels are tested against these. Blocks are read
// with memcpy, so `src` needs no particular alignment. Little-endian hosts only (as GGUF).
#include "kernels/ref/dequantize_ref.h"

#include <bit>
#include <cstring>
#include <string>

#include "core/fp16.h"
#include "kernels/ref/kquant_ref.h"

namespace lazyattn::kernels::ref {

static_assert(std::endian::native == std::endian::little, "GGUF data is little-endian");

namespace {

constexpr int kQK = 32;
constexpr int kQK_K = 256;

uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

float load_half(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }

template <typename T>
void convert_plain(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, src + i * sizeof(T), sizeof(T));
        dst[i] = static_cast<float>(v);
    }
}

void convert_f16(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(load_u16(src + 2 * i));
}

void convert_bf16(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(load_u16(src + 2 * i));
}

// --- Legacy 32-element blocks. Element j < 16 is the low nibble of qs[j], element j + 16 the
// --- high nibble of qs[j].

// Q4_0 {half d; u8 qs[16]}: x = d * (q - 8).
void block_q4_0(const uint8_t* b, float* y) {
    const float d = load_half(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * static_cast<float>((qs[j] & 0x0f) - 8);
        y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
    }
}

// Q4_1 {half d; half m; u8 qs[16]}: x = d * q + m.
void block_q4_1(const uint8_t* b, float* y) {
    const float d = load_half(b);
    const float m = load_half(b + 2);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * static_cast<float>(qs[j] & 0x0f) + m;
        y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
    }
}

// 5-bit quants: the fifth bit of element i (0..31) is bit i of the little-endian u32 qh.
int q5_value(const uint8_t* qs, uint32_t qh, int i) {
    const int low = i < 16 ? (qs[i] & 0x0f) : (qs[i - 16] >> 4);
    return low | static_cast<int>(((qh >> i) & 1u) << 4);
}

// Q5_0 {half d; u8 qh[4]; u8 qs[16]}: x = d * (q - 16).
void block_q5_0(const uint8_t* b, float* y) {
    const float d = load_half(b);
    const uint32_t qh = load_u32(b + 2);
    for (int i = 0; i < kQK; ++i) y[i] = d * static_cast<float>(q5_value(b + 6, qh, i) - 16);
}

// Q5_1 {half d; half m; u8 qh[4]; u8 qs[16]}: x = d * q + m.
void block_q5_1(const uint8_t* b, float* y) {
    const float d = load_half(b);
    const float m = load_half(b + 2);
    const uint32_t qh = load_u32(b + 4);
    for (int i = 0; i < kQK; ++i) y[i] = d * static_cast<float>(q5_value(b + 8, qh, i)) + m;
}

// Q8_0 {half d; i8 qs[32]}: x = d * q.
void block_q8_0(const uint8_t* b, float* y) {
    const float d = load_half(b);
    for (int i = 0; i < kQK; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(b[2 + i]));
}

// Q8_1 {half d; half s; i8 qs[32]}: x = d * q (s = d * sum(q) is only used by dot products).
void block_q8_1(const uint8_t* b, float* y) {
    const float d = load_half(b);
    for (int i = 0; i < kQK; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(b[4 + i]));
}

// --- K-quants: 256-element super-blocks.

// Q2_K {u8 scales[16]; u8 qs[64]; half d; half dmin}. Element e lies in half h = e / 128; with
// r = e % 128, its 2 bits are bits 2*(r/32) of qs[32*h + r%32], and it belongs to sub-block
// 8*h + 2*(r/32) + (r%32 >= 16), whose byte holds a 4-bit scale (low) and 4-bit min (high).
// x = d * scale * q - dmin * min.
void block_q2_K(const uint8_t* b, float* y) {
    const uint8_t* scales = b;
    const uint8_t* qs = b + 16;
    const float d = load_half(b + 80);
    const float dmin = load_half(b + 82);
    for (int e = 0; e < kQK_K; ++e) {
        const int h = e / 128, r = e % 128, shift = 2 * (r / 32), s = r % 32;
        const int q = (qs[32 * h + s] >> shift) & 3;
        const uint8_t sc = scales[8 * h + 2 * (r / 32) + (s >= 16 ? 1 : 0)];
        y[e] = d * static_cast<float>(sc & 0x0f) * static_cast<float>(q) - dmin * static_cast<float>(sc >> 4);
    }
}

// Q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d}. Same element order and sub-blocks as
// Q2_K for the low 2 bits; the third bit is bit (4*h + r/32) of hmask[r%32] and, when clear,
// subtracts 4. The 16 scales are 6-bit signed (offset 32): the low 4 bits of scale j are the
// low (j < 8) or high (j >= 8) nibble of scales[j % 8]; the high 2 bits are bits 2*(j/4) of
// scales[8 + j%4]. x = d * (scale - 32) * (q - (hbit ? 0 : 4)).
void block_q3_K(const uint8_t* b, float* y) {
    const uint8_t* hmask = b;
    const uint8_t* qs = b + 32;
    const uint8_t* sc = b + 96;
    const float d = load_half(b + 108);
    int scale[16];
    for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? (sc[j] & 0x0f) : (sc[j - 8] >> 4);
        const int high = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
        scale[j] = (low | (high << 4)) - 32;
    }
    for (int e = 0; e < kQK_K; ++e) {
        const int h = e / 128, r = e % 128, s = r % 32;
        const int q = (qs[32 * h + s] >> (2 * (r / 32))) & 3;
        const bool hbit = (hmask[s] >> (4 * h + r / 32)) & 1;
        const int sub = 8 * h + 2 * (r / 32) + (s >= 16 ? 1 : 0);
        y[e] = d * static_cast<float>(scale[sub]) * static_cast<float>(q - (hbit ? 0 : 4));
    }
}

// The 6-bit scale and min of a Q4_K/Q5_K sub-block: k4_scale_min (kernels/ref/kquant_ref.h).

// Q4_K {half d; half dmin; u8 scales[12]; u8 qs[128]}. Element e: chunk c = e / 64 uses
// qs[32*c .. 32*c+32); its first 32 elements are the low nibbles (sub-block 2c), the next 32 the
// high nibbles (sub-block 2c+1). x = d * scale * q - dmin * min.
void block_q4_K(const uint8_t* b, float* y) {
    const float d = load_half(b);
    const float dmin = load_half(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qs = b + 16;
    for (int e = 0; e < kQK_K; ++e) {
        const int c = e / 64, hi = (e % 64) / 32, l = e % 32;
        const int q = hi ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 0x0f);
        int scale, min;
        k4_scale_min(scales, 2 * c + hi, &scale, &min);
        y[e] = d * static_cast<float>(scale) * static_cast<float>(q) - dmin * static_cast<float>(min);
    }
}

// Q5_K {half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: Q4_K plus a fifth bit, bit
// (2c + hi) of qh[e % 32].
void block_q5_K(const uint8_t* b, float* y) {
    const float d = load_half(b);
    const float dmin = load_half(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + 48;
    for (int e = 0; e < kQK_K; ++e) {
        const int c = e / 64, hi = (e % 64) / 32, l = e % 32;
        const int low = hi ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 0x0f);
        const int q = low | (((qh[l] >> (2 * c + hi)) & 1) << 4);
        int scale, min;
        k4_scale_min(scales, 2 * c + hi, &scale, &min);
        y[e] = d * static_cast<float>(scale) * static_cast<float>(q) - dmin * static_cast<float>(min);
    }
}

// Q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; half d}. Element e: half h = e / 128, r = e % 128,
// quarter k = r / 32, l = r % 32. Low 4 bits: nibble (k / 2) of ql[64*h + 32*(k%2) + l]; high 2
// bits: bits 2k of qh[32*h + l]. Sub-block (scale index) 8*h + r/16. x = d * scale * (q - 32).
void block_q6_K(const uint8_t* b, float* y) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
    const float d = load_half(b + 208);
    for (int e = 0; e < kQK_K; ++e) {
        const int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
        const uint8_t lbyte = ql[64 * h + 32 * (k % 2) + l];
        const int low = (k / 2) ? (lbyte >> 4) : (lbyte & 0x0f);
        const int high = (qh[32 * h + l] >> (2 * k)) & 3;
        const int q = (low | (high << 4)) - 32;
        y[e] = d * static_cast<float>(scales[8 * h + r / 16]) * static_cast<float>(q);
    }
}

// Q8_K {float d; i8 qs[256]; i16 bsums[16]}: x = d * q (bsums only serve dot products).
void block_q8_K(const uint8_t* b, float* y) {
    float d;
    std::memcpy(&d, b, sizeof d);
    for (int e = 0; e < kQK_K; ++e) y[e] = d * static_cast<float>(static_cast<int8_t>(b[4 + e]));
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_function(GgmlType type) {
    switch (type) {
        case GgmlType::kQ4_0:
            return block_q4_0;
        case GgmlType::kQ4_1:
            return block_q4_1;
        case GgmlType::kQ5_0:
            return block_q5_0;
        case GgmlType::kQ5_1:
            return block_q5_1;
        case GgmlType::kQ8_0:
            return block_q8_0;
        case GgmlType::kQ8_1:
            return block_q8_1;
        case GgmlType::kQ2_K:
            return block_q2_K;
        case GgmlType::kQ3_K:
            return block_q3_K;
        case GgmlType::kQ4_K:
            return block_q4_K;
        case GgmlType::kQ5_K:
            return block_q5_K;
        case GgmlType::kQ6_K:
            return block_q6_K;
        case GgmlType::kQ8_K:
            return block_q8_K;
        default:
            return nullptr;
    }
}

}  // namespace

Status dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
    const GgmlTypeTraits traits = ggml_type_traits(type);
    const auto type_number = static_cast<uint32_t>(type);
    if (traits.block_size == 0) {
        return unsupported("cannot dequantize unknown ggml type " + std::to_string(type_number));
    }
    if (!traits.can_dequantize) {
        return unsupported(std::string("cannot dequantize ggml type ") + traits.name + " (" +
                           std::to_string(type_number) + ")");
    }
    if (n < 0 || n % traits.block_size != 0) {
        return invalid_argument("dequantize " + std::string(traits.name) + ": " + std::to_string(n) +
                                " elements is not a multiple of the block size " + std::to_string(traits.block_size));
    }
    const auto* s = static_cast<const uint8_t*>(src);
    switch (type) {
        case GgmlType::kF32:
            std::memcpy(dst, s, static_cast<size_t>(n) * sizeof(float));
            return {};
        case GgmlType::kF16:
            convert_f16(s, dst, n);
            return {};
        case GgmlType::kBF16:
            convert_bf16(s, dst, n);
            return {};
        case GgmlType::kF64:
            convert_plain<double>(s, dst, n);
            return {};
        case GgmlType::kI8:
            convert_plain<int8_t>(s, dst, n);
            return {};
        case GgmlType::kI16:
            convert_plain<int16_t>(s, dst, n);
            return {};
        case GgmlType::kI32:
            convert_plain<int32_t>(s, dst, n);
            return {};
        case GgmlType::kI64:
            convert_plain<int64_t>(s, dst, n);
            return {};
        default:
            break;
    }
    const BlockFn fn = block_function(type);
    if (fn == nullptr) return internal_error(std::string("no dequantizer for ") + traits.name);
    const int64_t num_blocks = n / traits.block_size;
    for (int64_t i = 0; i < num_blocks; ++i) {
        fn(s + static_cast<size_t>(i) * traits.type_size, dst + i * traits.block_size);
    }
    return {};
}

}  // namespace lazyattn::kernels::ref
