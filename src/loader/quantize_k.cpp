// Round-to-nearest quantizers for the K-quants (super-blocks of 256), so synthetic models and
// benchmarks can hold Q2_K..Q6_K weights. One scale (and min) per sub-block, the sub-block
// scales quantized against a super-block scale, as ggml's layouts require; no importance-
// weighted search (llama-quantize's output is more accurate, the byte layout is the same).
// Layouts as in dequantize.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "loader/quantize.h"

namespace lazyattn::loader {
namespace {

constexpr int kQK_K = 256;

float store_half(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
    return fp16_to_fp32(h);
}

int clamp_round(float v, int lo, int hi) { return std::clamp(int(std::nearbyint(v)), lo, hi); }

// Affine sub-blocks (x ~ d * sc * q - dmin * m, q in 0..qmax): per sub-block of `len` values
// the scale and min as integers of `scale_bits`, and q. Returns d and dmin as stored.
void affine_super_block(const float* x, int len, int qmax, int scale_max, int* sc, int* mn, int* q, float* d,
                        float* dmin, uint8_t* d_out, uint8_t* dmin_out) {
    const int subs = kQK_K / len;
    float scale_f[16], min_f[16], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < subs; ++s) {
        float lo = 0.0f, hi = 0.0f;
        for (int i = 0; i < len; ++i) lo = std::min(lo, x[s * len + i]), hi = std::max(hi, x[s * len + i]);
        scale_f[s] = (hi - lo) / float(qmax);
        min_f[s] = -lo;
        max_scale = std::max(max_scale, scale_f[s]);
        max_min = std::max(max_min, min_f[s]);
    }
    *d = store_half(d_out, max_scale / float(scale_max));
    *dmin = store_half(dmin_out, max_min / float(scale_max));
    for (int s = 0; s < subs; ++s) {
        sc[s] = *d > 0.0f ? clamp_round(scale_f[s] / *d, 0, scale_max) : 0;
        mn[s] = *dmin > 0.0f ? clamp_round(min_f[s] / *dmin, 0, scale_max) : 0;
        const float step = *d * float(sc[s]), off = *dmin * float(mn[s]);
        for (int i = 0; i < len; ++i) {
            q[s * len + i] = step > 0.0f ? clamp_round((x[s * len + i] + off) / step, 0, qmax) : 0;
        }
    }
}

// Symmetric sub-blocks of 16 (x ~ d * sc * q, q in qmin..qmax, sc signed in -smax-1..smax).
void symmetric_super_block(const float* x, int qmin, int qmax, int smax, int* sc, int* q, float* d, uint8_t* d_out) {
    float scale_f[16], max_abs = 0.0f;
    for (int s = 0; s < 16; ++s) {
        float amax = 0.0f, v = 0.0f;
        for (int i = 0; i < 16; ++i) {
            if (std::fabs(x[16 * s + i]) > amax) amax = std::fabs(x[16 * s + i]), v = x[16 * s + i];
        }
        scale_f[s] = v / float(qmin);  // the largest magnitude maps to qmin (the wider side)
        max_abs = std::max(max_abs, std::fabs(scale_f[s]));
    }
    *d = store_half(d_out, max_abs / float(smax));
    for (int s = 0; s < 16; ++s) {
        sc[s] = *d > 0.0f ? clamp_round(scale_f[s] / *d, -smax - 1, smax) : 0;
        const float step = *d * float(sc[s]);
        for (int i = 0; i < 16; ++i) q[16 * s + i] = step != 0.0f ? clamp_round(x[16 * s + i] / step, qmin, qmax) : 0;
    }
}

void pack_k4_scales(const int* sc, const int* mn, uint8_t* s) {
    for (int j = 0; j < 4; ++j) {
        s[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = uint8_t((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
        s[j + 8] = uint8_t((sc[j + 4] & 0x0f) | ((mn[j + 4] & 0x0f) << 4));
    }
}

}  // namespace

void quantize_row_q2_K(const float* src, void* dst, int64_t n) {
    auto* b = static_cast<uint8_t*>(dst);
    for (int64_t k = 0; k < n / kQK_K; ++k, src += kQK_K, b += 84) {
        int sc[16], mn[16], q[kQK_K];
        float d, dmin;
        affine_super_block(src, 16, 3, 15, sc, mn, q, &d, &dmin, b + 80, b + 82);
        for (int s = 0; s < 16; ++s) b[s] = uint8_t(sc[s] | (mn[s] << 4));
        std::memset(b + 16, 0, 64);
        for (int e = 0; e < kQK_K; ++e) b[16 + 32 * (e / 128) + e % 32] |= uint8_t(q[e] << (2 * ((e % 128) / 32)));
    }
}

void quantize_row_q3_K(const float* src, void* dst, int64_t n) {
    auto* b = static_cast<uint8_t*>(dst);
    for (int64_t k = 0; k < n / kQK_K; ++k, src += kQK_K, b += 110) {
        int sc[16], q[kQK_K];
        float d;
        symmetric_super_block(src, -4, 3, 31, sc, q, &d, b + 108);
        std::memset(b, 0, 108);
        for (int e = 0; e < kQK_K; ++e) {
            const int h = e / 128, j = (e % 128) / 32, l = e % 32, u = q[e] + 4;
            b[32 + 32 * h + l] |= uint8_t((u & 3) << (2 * j));
            if (u >= 4) b[l] |= uint8_t(1 << (4 * h + j));
        }
        for (int s = 0; s < 16; ++s) {
            const int v = sc[s] + 32;
            b[96 + s % 8] |= uint8_t((v & 0x0f) << (s < 8 ? 0 : 4));
            b[96 + 8 + s % 4] |= uint8_t((v >> 4) << (2 * (s / 4)));
        }
    }
}

void quantize_row_q4_K(const float* src, void* dst, int64_t n) {
    auto* b = static_cast<uint8_t*>(dst);
    for (int64_t k = 0; k < n / kQK_K; ++k, src += kQK_K, b += 144) {
        int sc[8], mn[8], q[kQK_K];
        float d, dmin;
        affine_super_block(src, 32, 15, 63, sc, mn, q, &d, &dmin, b, b + 2);
        pack_k4_scales(sc, mn, b + 4);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) b[16 + 32 * c + l] = uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
    }
}

void quantize_row_q5_K(const float* src, void* dst, int64_t n) {
    auto* b = static_cast<uint8_t*>(dst);
    for (int64_t k = 0; k < n / kQK_K; ++k, src += kQK_K, b += 176) {
        int sc[8], mn[8], q[kQK_K];
        float d, dmin;
        affine_super_block(src, 32, 31, 63, sc, mn, q, &d, &dmin, b, b + 2);
        pack_k4_scales(sc, mn, b + 4);
        std::memset(b + 16, 0, 32);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                const int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
                b[48 + 32 * c + l] = uint8_t((lo & 0x0f) | ((hi & 0x0f) << 4));
                b[16 + l] |= uint8_t(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
            }
    }
}

void quantize_row_q6_K(const float* src, void* dst, int64_t n) {
    auto* b = static_cast<uint8_t*>(dst);
    for (int64_t k = 0; k < n / kQK_K; ++k, src += kQK_K, b += 210) {
        int sc[16], q[kQK_K];
        float d;
        symmetric_super_block(src, -32, 31, 127, sc, q, &d, b + 208);
        std::memset(b, 0, 192);
        for (int e = 0; e < kQK_K; ++e) {
            const int h = e / 128, kq = (e % 128) / 32, l = e % 32, u = q[e] + 32;
            b[64 * h + 32 * (kq % 2) + l] |= uint8_t((u & 0x0f) << (4 * (kq / 2)));
            b[128 + 32 * h + l] |= uint8_t((u >> 4) << (2 * kq));
        }
        for (int s = 0; s < 16; ++s) b[192 + s] = uint8_t(int8_t(sc[s]));
    }
}

}  // namespace lazyattn::loader
