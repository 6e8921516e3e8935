#include "kernels/ref/quant_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/fp16.h"

namespace lazyattn::kernels::ref {
namespace {

float half(uint16_t h) { return fp16_to_fp32(h); }

template <typename Block>
float quantize_block(const float* x, Block& b) {
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    b.d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kQuantBlock; ++j) {
        b.qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
        sum += b.qs[j];
    }
    return float(sum) * d;
}

float dot_q4_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += ((w[i].qs[j] & 0x0f) - 8) * x[i].qs[j] + ((w[i].qs[j] >> 4) - 8) * x[i].qs[j + 16];
        }
        sum += float(sumi) * half(w[i].d) * half(x[i].d);
    }
    return sum;
}

float dot_q4_1(const BlockQ4_1* w, const BlockQ8_1* x, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) sumi += (w[i].qs[j] & 0x0f) * x[i].qs[j] + (w[i].qs[j] >> 4) * x[i].qs[j + 16];
        sum += float(sumi) * half(w[i].d) * half(x[i].d) + half(w[i].m) * half(x[i].s);
    }
    return sum;
}

float dot_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < 32; ++j) sumi += w[i].qs[j] * x[i].qs[j];
        sum += float(sumi) * half(w[i].d) * half(x[i].d);
    }
    return sum;
}

}  // namespace

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
    for (int64_t i = 0; i < n / kQuantBlock; ++i) quantize_block(x + i * kQuantBlock, y[i]);
}

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
    for (int64_t i = 0; i < n / kQuantBlock; ++i) y[i].s = fp32_to_fp16(quantize_block(x + i * kQuantBlock, y[i]));
}

float vec_dot(GgmlType type, const void* w, const void* x, int64_t n) {
    const int64_t nb = n / kQuantBlock;
    switch (type) {
        case GgmlType::kQ4_0:
            return dot_q4_0(static_cast<const BlockQ4_0*>(w), static_cast<const BlockQ8_0*>(x), nb);
        case GgmlType::kQ4_1:
            return dot_q4_1(static_cast<const BlockQ4_1*>(w), static_cast<const BlockQ8_1*>(x), nb);
        case GgmlType::kQ8_0:
            return dot_q8_0(static_cast<const BlockQ8_0*>(w), static_cast<const BlockQ8_0*>(x), nb);
        default:
            break;
    }
    LA_CHECK_MSG(false, "vec_dot: not a q4_0/q4_1/q8_0 weight type");
    return 0.0f;
}

void quant_matmul(GgmlType type, const void* w, const float* x, float* y, int64_t num_rows, int64_t in_dim,
                  int64_t out_dim) {
    const int64_t nb = in_dim / kQuantBlock;
    const size_t x_row_bytes = nb * activation_block_bytes(type), w_row_bytes = nb * weight_block_bytes(type);
    std::vector<uint8_t> xq(num_rows * x_row_bytes);
    for (int64_t r = 0; r < num_rows; ++r) {
        void* dst = xq.data() + r * x_row_bytes;
        if (uses_q8_1(type)) {
            quantize_row_q8_1(x + r * in_dim, static_cast<BlockQ8_1*>(dst), in_dim);
        } else {
            quantize_row_q8_0(x + r * in_dim, static_cast<BlockQ8_0*>(dst), in_dim);
        }
    }
    for (int64_t r = 0; r < num_rows; ++r) {
        for (int64_t o = 0; o < out_dim; ++o) {
            y[r * out_dim + o] =
                vec_dot(type, static_cast<const uint8_t*>(w) + o * w_row_bytes, xq.data() + r * x_row_bytes, in_dim);
        }
    }
}

}  // namespace lazyattn::kernels::ref
