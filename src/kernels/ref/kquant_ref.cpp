#include "kernels/ref/kquant_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "kernels/ref/quant_ref.h"

namespace lazyattn::kernels::ref {
namespace {

float load_half(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_fp32(h);
}

}  // namespace

void k4_scale_min(const uint8_t* s, int j, int* scale, int* min) {
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

namespace {

void k4_scales(const uint8_t* s, KUnpacked* u) {
    for (int j = 0; j < 8; ++j) {
        int sc, m;
        k4_scale_min(s, j, &sc, &m);
        u->scale[2 * j] = u->scale[2 * j + 1] = int16_t(sc);
        u->min[2 * j] = u->min[2 * j + 1] = int16_t(m);
    }
}

// Bytes per block and elements per block of a weight type, from the one GGUF type table
// (kernels/params/ggml_type.h); 0 bytes for a type that is not a weight type.
void block_geometry(GgmlType t, size_t* bytes, int64_t* elems) {
    const GgmlTypeTraits traits = ggml_type_traits(t);
    if (!is_weight_type(static_cast<uint32_t>(t)) || traits.block_size == 0) {
        *bytes = 0, *elems = 1;
        return;
    }
    *bytes = traits.type_size, *elems = traits.block_size;
}

// Q5_0 {half d; u8 qh[4]; u8 qs[16]} / Q5_1 {half d; half m; u8 qh[4]; u8 qs[16]}: 5-bit q,
// element i's fifth bit is bit i of qh. Returns the integer dot with the activation block.
int dot_q5_ints(const uint8_t* qh_bytes, const uint8_t* qs, const int8_t* x, int offset) {
    uint32_t qh;
    std::memcpy(&qh, qh_bytes, 4);
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
        const int low = i < 16 ? (qs[i] & 0x0f) : (qs[i - 16] >> 4);
        sum += (int(low | (((qh >> i) & 1) << 4)) - offset) * x[i];
    }
    return sum;
}

float dot_q5_0(const uint8_t* w, const BlockQ8_0* x, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; ++i, w += 22) {
        sum += float(dot_q5_ints(w + 2, w + 6, x[i].qs, 16)) * load_half(w) * fp16_to_fp32(x[i].d);
    }
    return sum;
}

float dot_q5_1(const uint8_t* w, const BlockQ8_1* x, int64_t nb) {
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; ++i, w += 24) {
        sum += float(dot_q5_ints(w + 4, w + 8, x[i].qs, 0)) * load_half(w) * fp16_to_fp32(x[i].d) +
               load_half(w + 2) * fp16_to_fp32(x[i].s);
    }
    return sum;
}

float dot_kquant(UnpackFn unpack, size_t block_bytes, const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
    KUnpacked u;
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        unpack(w + i * block_bytes, &u);
        sum += dot_unpacked(u, x[i]);
    }
    return sum;
}

float dot_16bit(bool bf16, const uint8_t* w, const float* x, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, w + 2 * i, 2);
        sum += (bf16 ? bf16_to_fp32(h) : fp16_to_fp32(h)) * x[i];
    }
    return sum;
}

}  // namespace

// Q2_K {u8 scales[16]; u8 qs[64]; half d; half dmin}: element 128h + 32j + l (l < 32) is bits 2j
// of qs[32h + l]; group 8h + 2j + l/16 has scale = low nibble, min = high nibble of its byte.
void unpack_q2_K(const uint8_t* b, KUnpacked* u) {
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) u->q[128 * h + 32 * j + l] = (b[16 + 32 * h + l] >> (2 * j)) & 3;
    for (int k = 0; k < 16; ++k) u->scale[k] = b[k] & 0x0f, u->min[k] = b[k] >> 4;
    u->d = load_half(b + 80);
    u->dmin = load_half(b + 82);
}

// Q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d}: as Q2_K for the low bits; the third
// bit is bit 4h + j of hmask[l] and, when clear, subtracts 4. Here q = value + 4 (0..7), so
// the offset becomes min = 4 * scale with dmin = d. Scales are 6-bit with offset 32.
void unpack_q3_K(const uint8_t* b, KUnpacked* u) {
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) {
                const int low = (b[32 + 32 * h + l] >> (2 * j)) & 3;
                const int hbit = (b[l] >> (4 * h + j)) & 1;
                u->q[128 * h + 32 * j + l] = uint8_t(low | (hbit << 2));
            }
    const uint8_t* sc = b + 96;
    for (int k = 0; k < 16; ++k) {
        const int low = k < 8 ? (sc[k] & 0x0f) : (sc[k - 8] >> 4);
        const int high = (sc[8 + k % 4] >> (2 * (k / 4))) & 3;
        u->scale[k] = int16_t((low | (high << 4)) - 32);
        u->min[k] = int16_t(4 * u->scale[k]);
    }
    u->d = u->dmin = load_half(b + 108);
}

// Q4_K {half d; half dmin; u8 scales[12]; u8 qs[128]}: chunk c (64 elements) is the low then
// the high nibbles of qs[32c .. 32c+32); sub-block j of 32 has a 6-bit scale and min.
void unpack_q4_K(const uint8_t* b, KUnpacked* u) {
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            u->q[64 * c + l] = b[16 + 32 * c + l] & 0x0f;
            u->q[64 * c + 32 + l] = b[16 + 32 * c + l] >> 4;
        }
    k4_scales(b + 4, u);
    u->d = load_half(b);
    u->dmin = load_half(b + 2);
}

// Q5_K {half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: Q4_K plus a fifth bit, bit
// 2c (low nibbles) or 2c + 1 (high nibbles) of qh[l].
void unpack_q5_K(const uint8_t* b, KUnpacked* u) {
    const uint8_t* qh = b + 16;
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            const uint8_t v = b[48 + 32 * c + l];
            u->q[64 * c + l] = uint8_t((v & 0x0f) | (((qh[l] >> (2 * c)) & 1) << 4));
            u->q[64 * c + 32 + l] = uint8_t((v >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4));
        }
    k4_scales(b + 4, u);
    u->d = load_half(b);
    u->dmin = load_half(b + 2);
}

// Q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; half d}: element 128h + 32k + l: low 4 bits are
// nibble k/2 of ql[64h + 32(k%2) + l], high 2 bits are bits 2k of qh[32h + l]; value q - 32.
void unpack_q6_K(const uint8_t* b, KUnpacked* u) {
    for (int h = 0; h < 2; ++h)
        for (int k = 0; k < 4; ++k)
            for (int l = 0; l < 32; ++l) {
                const uint8_t lb = b[64 * h + 32 * (k % 2) + l];
                const int low = (k / 2) ? (lb >> 4) : (lb & 0x0f);
                const int high = (b[128 + 32 * h + l] >> (2 * k)) & 3;
                u->q[128 * h + 32 * k + l] = uint8_t(low | (high << 4));
            }
    for (int k = 0; k < 16; ++k) {
        u->scale[k] = int8_t(b[192 + k]);
        u->min[k] = int16_t(32 * u->scale[k]);
    }
    u->d = u->dmin = load_half(b + 208);
}

UnpackFn unpack_function(GgmlType type) {
    switch (type) {
        case GgmlType::kQ2_K:
            return unpack_q2_K;
        case GgmlType::kQ3_K:
            return unpack_q3_K;
        case GgmlType::kQ4_K:
            return unpack_q4_K;
        case GgmlType::kQ5_K:
            return unpack_q5_K;
        case GgmlType::kQ6_K:
            return unpack_q6_K;
        default:
            return nullptr;
    }
}

void dot_unpacked_ints(const KUnpacked& u, const BlockQ8_K& x, int32_t* isum, int32_t* msum) {
    int32_t is = 0, ms = 0;
    for (int k = 0; k < 16; ++k) {
        int32_t g = 0;
        for (int i = 16 * k; i < 16 * k + 16; ++i) g += int32_t(u.q[i]) * x.qs[i];
        is += u.scale[k] * g;
        ms += u.min[k] * x.bsums[k];
    }
    *isum = is;
    *msum = ms;
}

float dot_unpacked(const KUnpacked& u, const BlockQ8_K& x) {
    int32_t is, ms;
    dot_unpacked_ints(u, x, &is, &ms);
    return combine_kquant(u, x.d, is, ms);
}

void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kSuperBlock; ++b, x += kSuperBlock) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kSuperBlock; ++j) {
            if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
        }
        BlockQ8_K& o = y[b];
        if (amax == 0.0f) {
            std::memset(&o, 0, sizeof o);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < kSuperBlock; ++j) o.qs[j] = int8_t(std::min(127.0f, std::nearbyint(iscale * x[j])));
        for (int k = 0; k < 16; ++k) {
            int s = 0;
            for (int j = 16 * k; j < 16 * k + 16; ++j) s += o.qs[j];
            o.bsums[k] = int16_t(s);
        }
        o.d = 1.0f / iscale;
    }
}

ActFormat activation_format(GgmlType type) {
    switch (type) {
        case GgmlType::kF32:
        case GgmlType::kF16:
        case GgmlType::kBF16:
            return ActFormat::kF32;
        case GgmlType::kQ4_1:
        case GgmlType::kQ5_1:
            return ActFormat::kQ8_1;
        case GgmlType::kQ4_0:
        case GgmlType::kQ5_0:
        case GgmlType::kQ8_0:
            return ActFormat::kQ8_0;
        default:
            return ActFormat::kQ8_K;
    }
}

size_t activation_row_bytes(GgmlType type, int64_t n) {
    switch (activation_format(type)) {
        case ActFormat::kF32:
            return size_t(n) * 4;
        case ActFormat::kQ8_0:
            return size_t(n / 32) * sizeof(BlockQ8_0);
        case ActFormat::kQ8_1:
            return size_t(n / 32) * sizeof(BlockQ8_1);
        case ActFormat::kQ8_K:
            return size_t(n / kSuperBlock) * sizeof(BlockQ8_K);
    }
    return 0;
}

void prepare_activation_row(GgmlType type, const float* x, void* y, int64_t n) {
    switch (activation_format(type)) {
        case ActFormat::kF32:
            std::memcpy(y, x, size_t(n) * 4);
            return;
        case ActFormat::kQ8_0:
            quantize_row_q8_0(x, static_cast<BlockQ8_0*>(y), n);
            return;
        case ActFormat::kQ8_1:
            quantize_row_q8_1(x, static_cast<BlockQ8_1*>(y), n);
            return;
        case ActFormat::kQ8_K:
            quantize_row_q8_K(x, static_cast<BlockQ8_K*>(y), n);
            return;
    }
}

float vec_dot_typed(GgmlType type, const void* wv, const void* x, int64_t n) {
    const auto* w = static_cast<const uint8_t*>(wv);
    switch (type) {
        case GgmlType::kQ4_0:
        case GgmlType::kQ4_1:
        case GgmlType::kQ8_0:
            return vec_dot(type, w, x, n);
        case GgmlType::kQ5_0:
            return dot_q5_0(w, static_cast<const BlockQ8_0*>(x), n / 32);
        case GgmlType::kQ5_1:
            return dot_q5_1(w, static_cast<const BlockQ8_1*>(x), n / 32);
        case GgmlType::kF16:
            return dot_16bit(false, w, static_cast<const float*>(x), n);
        case GgmlType::kBF16:
            return dot_16bit(true, w, static_cast<const float*>(x), n);
        case GgmlType::kF32:
            break;
        default: {
            size_t bytes;
            int64_t elems;
            block_geometry(type, &bytes, &elems);
            return dot_kquant(unpack_function(type), bytes, w, static_cast<const BlockQ8_K*>(x), n / kSuperBlock);
        }
    }
    return 0.0f;
}

void typed_matmul(GgmlType type, const void* w, const float* x, float* y, int64_t num_rows, int64_t in_dim,
                  int64_t out_dim) {
    size_t bytes;
    int64_t elems;
    block_geometry(type, &bytes, &elems);
    const size_t w_row = size_t(in_dim / elems) * bytes, x_row = activation_row_bytes(type, in_dim);
    std::vector<uint8_t> xq(size_t(num_rows) * x_row);
    for (int64_t r = 0; r < num_rows; ++r) prepare_activation_row(type, x + r * in_dim, xq.data() + r * x_row, in_dim);
    for (int64_t r = 0; r < num_rows; ++r)
        for (int64_t o = 0; o < out_dim; ++o)
            y[r * out_dim + o] =
                vec_dot_typed(type, static_cast<const uint8_t*>(w) + o * w_row, xq.data() + r * x_row, in_dim);
}

}  // namespace lazyattn::kernels::ref
