#include "kernels/ref/kquant_r16_ref.h"

#include <cstring>

#include "core/fp16.h"

namespace lazyattn::kernels::ref {
namespace {

// GGUF offsets and sizes of the parts the layout transposes.
struct Geometry {
    size_t block;      // GGUF bytes per super-block
    size_t qs, qs_n;   // 4-bit (Q4_K/Q5_K) or low-4-bit (Q6_K ql) bytes
    size_t qh, qh_n;   // high bits
    size_t scales_at;  // offset of the scales in the main part
};

Geometry geometry(GgmlType t) {
    switch (t) {
        case GgmlType::kQ4_K:
            return {144, 16, 128, 0, 0, 2048};
        case GgmlType::kQ5_K:
            return {176, 48, 128, 16, 32, 2560};
        case GgmlType::kQ6_K:
            return {210, 0, 128, 128, 64, 3072};
        default:
            return {};
    }
}

float load_half(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_fp32(h);
}

}  // namespace

bool has_kquant_r16(GgmlType t) { return t == GgmlType::kQ4_K || t == GgmlType::kQ5_K || t == GgmlType::kQ6_K; }

size_t kquant_r16_main_bytes(GgmlType t) {
    switch (t) {
        case GgmlType::kQ4_K:
            return 2304;
        case GgmlType::kQ5_K:
            return 2816;
        case GgmlType::kQ6_K:
            return 3328;
        default:
            return 0;
    }
}

size_t kquant_r16_tail_bytes(GgmlType t) { return t == GgmlType::kQ6_K ? 32 : 64; }

void repack_kquant_r16(GgmlType t, const uint8_t* w, size_t w_row_bytes, int64_t out_dim, int64_t n, int64_t g_begin,
                       int64_t g_end, uint8_t* dst) {
    const Geometry geo = geometry(t);
    const int64_t nsb = n / kSuperBlock;
    const size_t main = kquant_r16_main_bytes(t), tail = kquant_r16_tail_bytes(t);
    const size_t group_bytes = kquant_r16_group_bytes(t, n);
    for (int64_t g = g_begin; g < g_end; ++g) {
        uint8_t* gd = dst + g * group_bytes;
        std::memset(gd, 0, group_bytes);
        for (int i = 0; i < kR16KRows && g * kR16KRows + i < out_dim; ++i) {
            const uint8_t* row = w + (g * kR16KRows + i) * w_row_bytes;
            for (int64_t sb = 0; sb < nsb; ++sb) {
                const uint8_t* b = row + sb * geo.block;
                uint8_t* m = gd + sb * main;
                uint8_t* tl = gd + nsb * main + sb * tail;
                for (size_t j = 0; j < geo.qs_n / 4; ++j) std::memcpy(m + 64 * j + 4 * i, b + geo.qs + 4 * j, 4);
                for (size_t j = 0; j < geo.qh_n / 4; ++j)
                    std::memcpy(m + 64 * (geo.qs_n / 4 + j) + 4 * i, b + geo.qh + 4 * j, 4);
                uint8_t* sc = m + geo.scales_at;
                if (t == GgmlType::kQ6_K) {
                    for (int k = 0; k < 16; ++k) sc[16 * k + i] = b[192 + k];
                    std::memcpy(tl + 2 * i, b + 208, 2);
                } else {
                    for (int j = 0; j < 8; ++j) {
                        int s, mn;
                        k4_scale_min(b + 4, j, &s, &mn);
                        sc[16 * j + i] = uint8_t(s);
                        sc[128 + 32 * (j / 2) + 2 * i + j % 2] = uint8_t(mn);
                    }
                    std::memcpy(tl + 2 * i, b, 2);
                    std::memcpy(tl + 32 + 2 * i, b + 2, 2);
                }
            }
        }
    }
}

void unpack_kquant_r16(GgmlType t, const uint8_t* r16, int64_t n, int64_t row, int64_t sb, KUnpacked* u) {
    const Geometry geo = geometry(t);
    const int64_t nsb = n / kSuperBlock;
    const size_t main = kquant_r16_main_bytes(t), tail = kquant_r16_tail_bytes(t);
    const int64_t g = row / kR16KRows;
    const int i = int(row % kR16KRows);
    const uint8_t* gd = r16 + g * kquant_r16_group_bytes(t, n);
    const uint8_t* m = gd + sb * main;
    const uint8_t* tl = gd + nsb * main + sb * tail;
    // Byte j of the GGUF quant bytes of this row.
    auto qs = [&](int j) { return m[64 * (j / 4) + 4 * i + j % 4]; };
    auto qh = [&](int j) { return m[64 * (geo.qs_n / 4 + j / 4) + 4 * i + j % 4]; };
    const uint8_t* sc = m + geo.scales_at;
    if (t == GgmlType::kQ6_K) {
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 4; ++k)
                for (int l = 0; l < 32; ++l) {
                    const uint8_t lb = qs(64 * h + 32 * (k % 2) + l);
                    const int low = (k / 2) ? (lb >> 4) : (lb & 0x0f);
                    const int high = (qh(32 * h + l) >> (2 * k)) & 3;
                    u->q[128 * h + 32 * k + l] = uint8_t(low | (high << 4));
                }
        for (int k = 0; k < 16; ++k) {
            u->scale[k] = int8_t(sc[16 * k + i]);
            u->min[k] = int16_t(32 * u->scale[k]);
        }
        u->d = u->dmin = load_half(tl + 2 * i);
        return;
    }
    const bool q5 = t == GgmlType::kQ5_K;
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            const uint8_t v = qs(32 * c + l);
            const int h0 = q5 ? (qh(l) >> (2 * c)) & 1 : 0, h1 = q5 ? (qh(l) >> (2 * c + 1)) & 1 : 0;
            u->q[64 * c + l] = uint8_t((v & 0x0f) | (h0 << 4));
            u->q[64 * c + 32 + l] = uint8_t((v >> 4) | (h1 << 4));
        }
    for (int j = 0; j < 8; ++j) {
        u->scale[2 * j] = u->scale[2 * j + 1] = sc[16 * j + i];
        u->min[2 * j] = u->min[2 * j + 1] = sc[128 + 32 * (j / 2) + 2 * i + j % 2];
    }
    u->d = load_half(tl + 2 * i);
    u->dmin = load_half(tl + 32 + 2 * i);
}

void gemv_kquant_r16(GgmlType t, const uint8_t* r16, int64_t n, int64_t out_dim, const BlockQ8_K* x, float* y) {
    KUnpacked u;
    for (int64_t o = 0; o < out_dim; ++o) {
        float s = 0.0f;
        for (int64_t sb = 0; sb < n / kSuperBlock; ++sb) {
            unpack_kquant_r16(t, r16, n, o, sb, &u);
            s += dot_unpacked(u, x[sb]);
        }
        y[o] = s;
    }
}

}  // namespace lazyattn::kernels::ref
