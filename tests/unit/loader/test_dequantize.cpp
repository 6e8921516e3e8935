// Dequantization against hand-made blocks. Each test chooses scales and quants, packs them the
// way ggml's reference *quantizers* lay them out (element-major: "sub-block j holds elements
// 16j..16j+15", "quant of element e goes to byte X bit Y"), and computes the expected floats
// directly from the chosen values. The code under test decodes in the opposite direction, so a
// wrong bit position, nibble order, scale unpacking or block stride shows up as a mismatch.
// Scales are powers of two and quants small integers, so every expected value is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "loader/dequantize.h"
#include "loader/ggml_type.h"

namespace lazyattn::loader {
namespace {

// fp16 bit patterns of exactly representable values.
constexpr uint16_t kHalfOne = 0x3c00, kHalfTwo = 0x4000, kHalfHalf = 0x3800, kHalfQuarter = 0x3400,
                   kHalfEighth = 0x3000, kHalfMinusOne = 0xbc00, kHalfMinusQuarter = 0xb400, kHalfSixteenth = 0x2c00;

void put_u16(std::vector<uint8_t>& b, size_t at, uint16_t v) { std::memcpy(b.data() + at, &v, 2); }

std::vector<float> run(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
    EXPECT_EQ(bytes.size(), ggml_row_size(type, n));
    std::vector<float> out(static_cast<size_t>(n), -12345.0f);
    const Status st = dequantize_row(type, bytes.data(), out.data(), n);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return out;
}

void expect_exact(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
}

TEST(Dequantize, F32F16BF16) {
    const float f32[3] = {1.5f, -0.0f, 3.25e-3f};
    std::vector<uint8_t> b(sizeof f32);
    std::memcpy(b.data(), f32, sizeof f32);
    expect_exact(run(GgmlType::kF32, b, 3), {1.5f, -0.0f, 3.25e-3f});

    // F16: 1, -2, 65504 (max), 2^-24 (smallest subnormal), 0.333251953125
    std::vector<uint8_t> h(10);
    const uint16_t halves[5] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x3555};
    std::memcpy(h.data(), halves, sizeof halves);
    expect_exact(run(GgmlType::kF16, h, 5), {1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24), 0.333251953125f});

    // BF16 is the top half of an fp32: 1.5 = 0x3fc0, -2 = 0xc000, 2^-100 = 0x0d80.
    std::vector<uint8_t> bf(6);
    const uint16_t bfs[3] = {0x3fc0, 0xc000, 0x0d80};
    std::memcpy(bf.data(), bfs, sizeof bfs);
    expect_exact(run(GgmlType::kBF16, bf, 3), {1.5f, -2.0f, std::ldexp(1.0f, -100)});
}

TEST(Dequantize, IntegerAndF64Types) {
    std::vector<uint8_t> b(4);
    const int8_t i8[4] = {-128, -1, 0, 127};
    std::memcpy(b.data(), i8, 4);
    expect_exact(run(GgmlType::kI8, b, 4), {-128.0f, -1.0f, 0.0f, 127.0f});
    std::vector<uint8_t> d(16);
    const double f64[2] = {0.5, -1e10};
    std::memcpy(d.data(), f64, 16);
    expect_exact(run(GgmlType::kF64, d, 2), {0.5f, -1e10f});
    std::vector<uint8_t> i(8);
    const int32_t i32[2] = {-70000, 123456};
    std::memcpy(i.data(), i32, 8);
    expect_exact(run(GgmlType::kI32, i, 2), {-70000.0f, 123456.0f});
}

// --- 32-element blocks: element j < 16 -> low nibble of qs[j]; j >= 16 -> high nibble of qs[j-16].

TEST(Dequantize, Q4_0) {
    const uint16_t d[2] = {kHalfHalf, kHalfMinusQuarter};
    const float df[2] = {0.5f, -0.25f};
    std::vector<uint8_t> b(2 * 18, 0);
    std::vector<float> want;
    for (int blk = 0; blk < 2; ++blk) {
        put_u16(b, 18 * blk, d[blk]);
        for (int i = 0; i < 32; ++i) {
            const int q = (i + 5 * blk) % 16;
            b[18 * blk + 2 + i % 16] |= static_cast<uint8_t>(i < 16 ? q : q << 4);
            want.push_back(df[blk] * static_cast<float>(q - 8));
        }
    }
    expect_exact(run(GgmlType::kQ4_0, b, 64), want);
}

TEST(Dequantize, Q4_1) {
    std::vector<uint8_t> b(2 * 20, 0);
    std::vector<float> want;
    const uint16_t d[2] = {kHalfQuarter, kHalfTwo}, m[2] = {kHalfMinusOne, kHalfEighth};
    const float df[2] = {0.25f, 2.0f}, mf[2] = {-1.0f, 0.125f};
    for (int blk = 0; blk < 2; ++blk) {
        put_u16(b, 20 * blk, d[blk]);
        put_u16(b, 20 * blk + 2, m[blk]);
        for (int i = 0; i < 32; ++i) {
            const int q = (3 * i + 1 + blk) % 16;
            b[20 * blk + 4 + i % 16] |= static_cast<uint8_t>(i < 16 ? q : q << 4);
            want.push_back(df[blk] * static_cast<float>(q) + mf[blk]);
        }
    }
    expect_exact(run(GgmlType::kQ4_1, b, 64), want);
}

// 5-bit: the low 4 bits as Q4_0; bit 4 of element i is bit i of the little-endian u32 qh.
TEST(Dequantize, Q5_0) {
    std::vector<uint8_t> b(22, 0);
    std::vector<float> want;
    put_u16(b, 0, kHalfEighth);
    uint32_t qh = 0;
    for (int i = 0; i < 32; ++i) {
        const int q = (7 * i + 3) % 32;
        b[6 + i % 16] |= static_cast<uint8_t>(i < 16 ? (q & 15) : (q & 15) << 4);
        qh |= static_cast<uint32_t>(q >> 4) << i;
        want.push_back(0.125f * static_cast<float>(q - 16));
    }
    std::memcpy(b.data() + 2, &qh, 4);
    expect_exact(run(GgmlType::kQ5_0, b, 32), want);
}

TEST(Dequantize, Q5_1) {
    std::vector<uint8_t> b(24, 0);
    std::vector<float> want;
    put_u16(b, 0, kHalfHalf);
    put_u16(b, 2, kHalfTwo);
    uint32_t qh = 0;
    for (int i = 0; i < 32; ++i) {
        const int q = (5 * i + 2) % 32;
        b[8 + i % 16] |= static_cast<uint8_t>(i < 16 ? (q & 15) : (q & 15) << 4);
        qh |= static_cast<uint32_t>(q >> 4) << i;
        want.push_back(0.5f * static_cast<float>(q) + 2.0f);
    }
    std::memcpy(b.data() + 4, &qh, 4);
    expect_exact(run(GgmlType::kQ5_1, b, 32), want);
}

TEST(Dequantize, Q8_0) {
    std::vector<uint8_t> b(2 * 34, 0);
    std::vector<float> want;
    const uint16_t d[2] = {kHalfQuarter, kHalfMinusOne};
    const float df[2] = {0.25f, -1.0f};
    for (int blk = 0; blk < 2; ++blk) {
        put_u16(b, 34 * blk, d[blk]);
        for (int i = 0; i < 32; ++i) {
            const int q = (37 * i + 11 * blk) % 256 - 128;  // covers -128 and 127 ranges
            b[34 * blk + 2 + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
            want.push_back(df[blk] * static_cast<float>(q));
        }
    }
    expect_exact(run(GgmlType::kQ8_0, b, 64), want);
}

TEST(Dequantize, Q8_1IgnoresSum) {
    std::vector<uint8_t> b(36, 0);
    put_u16(b, 0, kHalfHalf);
    put_u16(b, 2, 0x7bff);  // s: not used by dequantization
    std::vector<float> want;
    for (int i = 0; i < 32; ++i) {
        b[4 + i] = static_cast<uint8_t>(static_cast<int8_t>(i - 16));
        want.push_back(0.5f * static_cast<float>(i - 16));
    }
    expect_exact(run(GgmlType::kQ8_1, b, 32), want);
}

// --- K-quants (256 elements). The packing below follows ggml's quantize_row_*_ref.

// 2-bit quants of 256 elements: byte 32*(e/128) + e%32, bits 2*((e%128)/32).
void pack_2bit(const int* q, uint8_t* qs) {
    for (int e = 0; e < 256; ++e) qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q[e] << (2 * ((e % 128) / 32)));
}

TEST(Dequantize, Q2_K) {
    std::vector<uint8_t> b(84, 0);
    int q[256];
    int sc[16], mn[16];
    for (int j = 0; j < 16; ++j) {
        sc[j] = (j * 5 + 1) % 16;
        mn[j] = (j * 3 + 7) % 16;
        b[j] = static_cast<uint8_t>(sc[j] | (mn[j] << 4));  // sub-block j = elements 16j..16j+15
    }
    for (int e = 0; e < 256; ++e) q[e] = (e * 7 + e / 64) % 4;
    pack_2bit(q, b.data() + 16);
    put_u16(b, 80, kHalfHalf);     // d
    put_u16(b, 82, kHalfQuarter);  // dmin
    std::vector<float> want;
    for (int e = 0; e < 256; ++e) {
        want.push_back(0.5f * static_cast<float>(sc[e / 16]) * static_cast<float>(q[e]) -
                       0.25f * static_cast<float>(mn[e / 16]));
    }
    expect_exact(run(GgmlType::kQ2_K, b, 256), want);
}

TEST(Dequantize, Q3_K) {
    std::vector<uint8_t> b(110, 0);
    uint8_t* hmask = b.data();
    uint8_t* qs = b.data() + 32;
    uint8_t* scales = b.data() + 96;
    int ls[16];  // 6-bit scale codes; scale = code - 32
    for (int j = 0; j < 16; ++j) {
        ls[j] = (j * 13 + 5) % 64;
        if (j < 8) {
            scales[j] = static_cast<uint8_t>(ls[j] & 15);
        } else {
            scales[j - 8] |= static_cast<uint8_t>((ls[j] & 15) << 4);
        }
        scales[j % 4 + 8] |= static_cast<uint8_t>((ls[j] >> 4) << (2 * (j / 4)));
    }
    int l[256];  // 3-bit codes; quant = code - 4
    int low[256];
    for (int e = 0; e < 256; ++e) {
        l[e] = (e * 5 + e / 32) % 8;
        low[e] = l[e] & 3;
        if (l[e] > 3) hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
    }
    pack_2bit(low, qs);
    put_u16(b, 108, kHalfSixteenth);
    std::vector<float> want;
    for (int e = 0; e < 256; ++e) {
        want.push_back(0.0625f * static_cast<float>(ls[e / 16] - 32) * static_cast<float>(l[e] - 4));
    }
    expect_exact(run(GgmlType::kQ3_K, b, 256), want);
}

// The 12-byte 6-bit scale/min packing of Q4_K and Q5_K for 8 sub-blocks of 32.
void pack_k4_scales(const int* ls, const int* lm, uint8_t* s) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            s[j] = static_cast<uint8_t>(ls[j]);
            s[j + 4] = static_cast<uint8_t>(lm[j]);
        } else {
            s[j + 4] = static_cast<uint8_t>((ls[j] & 15) | ((lm[j] & 15) << 4));
            s[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
            s[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
        }
    }
}

// 4-bit quants: chunk c of 64 elements uses 32 bytes; element 64c + l (l < 32) in the low nibble
// of byte 32c + l, element 64c + 32 + l in its high nibble.
void pack_k4_quants(const int* q, uint8_t* qs) {
    for (int e = 0; e < 256; ++e) {
        const int c = e / 64, r = e % 64;
        qs[32 * c + r % 32] |= static_cast<uint8_t>((q[e] & 15) << (r < 32 ? 0 : 4));
    }
}

TEST(Dequantize, Q4_K) {
    std::vector<uint8_t> b(144, 0);
    int ls[8], lm[8], q[256];
    for (int j = 0; j < 8; ++j) {
        ls[j] = (j * 23 + 9) % 64;  // exercises the high bits of both halves
        lm[j] = (j * 41 + 50) % 64;
    }
    for (int e = 0; e < 256; ++e) q[e] = (e * 11 + e / 32) % 16;
    put_u16(b, 0, kHalfEighth);
    put_u16(b, 2, kHalfSixteenth);
    pack_k4_scales(ls, lm, b.data() + 4);
    pack_k4_quants(q, b.data() + 16);
    std::vector<float> want;
    for (int e = 0; e < 256; ++e) {
        want.push_back(0.125f * static_cast<float>(ls[e / 32]) * static_cast<float>(q[e]) -
                       0.0625f * static_cast<float>(lm[e / 32]));
    }
    expect_exact(run(GgmlType::kQ4_K, b, 256), want);
}

TEST(Dequantize, Q5_K) {
    std::vector<uint8_t> b(176, 0);
    int ls[8], lm[8], q[256];
    for (int j = 0; j < 8; ++j) {
        ls[j] = (j * 29 + 3) % 64;
        lm[j] = (j * 17 + 61) % 64;
    }
    for (int e = 0; e < 256; ++e) q[e] = (e * 13 + e / 16) % 32;
    put_u16(b, 0, kHalfQuarter);
    put_u16(b, 2, kHalfOne);
    pack_k4_scales(ls, lm, b.data() + 4);
    uint8_t* qh = b.data() + 16;
    for (int e = 0; e < 256; ++e) {
        // Bit 4 of the quant: qh[e % 32], bit index = sub-block e / 32.
        if (q[e] > 15) qh[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
    }
    pack_k4_quants(q, b.data() + 48);
    std::vector<float> want;
    for (int e = 0; e < 256; ++e) {
        want.push_back(0.25f * static_cast<float>(ls[e / 32]) * static_cast<float>(q[e]) -
                       1.0f * static_cast<float>(lm[e / 32]));
    }
    expect_exact(run(GgmlType::kQ5_K, b, 256), want);
}

TEST(Dequantize, Q6_K) {
    std::vector<uint8_t> b(2 * 210, 0);
    std::vector<float> want;
    const uint16_t d[2] = {kHalfSixteenth, kHalfMinusQuarter};
    const float df[2] = {0.0625f, -0.25f};
    for (int blk = 0; blk < 2; ++blk) {
        uint8_t* base = b.data() + 210 * blk;
        int l[256];  // 6-bit codes; quant = code - 32
        for (int e = 0; e < 256; ++e) l[e] = (e * 19 + blk + e / 64) % 64;
        int8_t sc[16];
        for (int j = 0; j < 16; ++j) sc[j] = static_cast<int8_t>((j * 37 + 5 * blk) % 256 - 128);
        std::memcpy(base + 192, sc, 16);
        for (int h = 0; h < 2; ++h) {  // two halves of 128, as in quantize_row_q6_K_ref
            uint8_t* ql = base + 64 * h;
            uint8_t* qh = base + 128 + 32 * h;
            const int* L = l + 128 * h;
            for (int i = 0; i < 32; ++i) {
                ql[i] = static_cast<uint8_t>((L[i] & 15) | ((L[i + 64] & 15) << 4));
                ql[i + 32] = static_cast<uint8_t>((L[i + 32] & 15) | ((L[i + 96] & 15) << 4));
                qh[i] = static_cast<uint8_t>((L[i] >> 4) | ((L[i + 32] >> 4) << 2) | ((L[i + 64] >> 4) << 4) |
                                             ((L[i + 96] >> 4) << 6));
            }
        }
        put_u16(b, 210 * blk + 208, d[blk]);
        for (int e = 0; e < 256; ++e) {
            want.push_back(df[blk] * static_cast<float>(sc[e / 16]) * static_cast<float>(l[e] - 32));
        }
    }
    expect_exact(run(GgmlType::kQ6_K, b, 512), want);
}

TEST(Dequantize, Q8_K) {
    std::vector<uint8_t> b(292, 0);
    const float d = 0.375f;
    std::memcpy(b.data(), &d, 4);
    std::vector<float> want;
    for (int e = 0; e < 256; ++e) {
        const int q = (e * 71) % 255 - 127;
        b[4 + e] = static_cast<uint8_t>(static_cast<int8_t>(q));
        want.push_back(d * static_cast<float>(q));
    }
    expect_exact(run(GgmlType::kQ8_K, b, 256), want);
}

TEST(Dequantize, RejectsBadRequests) {
    std::vector<uint8_t> b(1024, 0);
    std::vector<float> out(1024);
    EXPECT_EQ(dequantize_row(GgmlType::kQ4_0, b.data(), out.data(), 31).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(dequantize_row(GgmlType::kQ4_K, b.data(), out.data(), 32).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(dequantize_row(GgmlType::kF32, b.data(), out.data(), -1).code(), StatusCode::kInvalidArgument);
    const Status iq = dequantize_row(static_cast<GgmlType>(16), b.data(), out.data(), 256);
    EXPECT_EQ(iq.code(), StatusCode::kUnsupported);
    EXPECT_NE(iq.message().find("IQ2_XXS"), std::string::npos) << iq.message();
    const Status unknown = dequantize_row(static_cast<GgmlType>(77), b.data(), out.data(), 32);
    EXPECT_EQ(unknown.code(), StatusCode::kUnsupported);
    EXPECT_NE(unknown.message().find("77"), std::string::npos) << unknown.message();
    EXPECT_TRUE(dequantize_row(GgmlType::kQ8_0, b.data(), out.data(), 0).ok());
}

}  // namespace
}  // namespace lazyattn::loader
