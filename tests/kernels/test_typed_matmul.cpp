// The weight types computed by row dot kernels (Q5_0, Q5_1, Q2_K..Q6_K, F16, BF16): the scalar
// reference against loader/dequantize.cpp (the gguf-py-identical truth), every SIMD kernel set
// this CPU runs against the reference, and the CPU backend's whole matmul (decode and prefill
// shapes, threads, bias) against the reference matmul. Fresh random blocks, odd sizes.
#include <cstring>

#include "backend/backend.h"
#include "backend/cpu/simd/quant_dot.h"
#include "core/fp16.h"
#include "kernels/ref/kquant_r16_ref.h"
#include "kernels/ref/kquant_ref.h"
#include "loader/dequantize.h"
#include "random_inputs.h"

namespace lazyattn {
namespace {

using backend::cpu::simd::num_quant_kernel_sets;
using backend::cpu::simd::quant_kernel_set;
using kernels::GgmlType;
using W = kernels::GgmlType;

constexpr W kTypes[] = {W::kQ5_0, W::kQ5_1, W::kQ2_K, W::kQ3_K, W::kQ4_K, W::kQ5_K, W::kQ6_K, W::kF16, W::kBF16};
constexpr W kKQuants[] = {W::kQ2_K, W::kQ3_K, W::kQ4_K, W::kQ5_K, W::kQ6_K};
// The prefill tiles also serve the 32-element types of quant_matmul.cpp where a set has no
// register-tiled GEMM of its own (AVX2).
constexpr W kTileTypes[] = {W::kQ4_0, W::kQ4_1, W::kQ8_0, W::kQ5_0, W::kQ5_1, W::kQ2_K,
                            W::kQ3_K, W::kQ4_K, W::kQ5_K, W::kQ6_K, W::kF16,  W::kBF16};

loader::GgmlTypeTraits traits(W t) { return loader::ggml_type_traits(static_cast<uint32_t>(t)); }
const char* name(W t) { return traits(t).name; }

// A row length of this type near `n` (a multiple of its block).
int64_t row_len(W t, int64_t n) {
    const int64_t b = traits(t).block_size;
    return std::max<int64_t>(b, n / b * b);
}

void put_half(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

// Random weights: random bytes for the quants, with every fp16 scale field set to a sane value
// (random bytes there would be NaN/inf or huge); random floats for F16/BF16.
std::vector<uint8_t> random_weights(W t, int64_t rows, int64_t n, std::mt19937_64& rng) {
    const auto tr = traits(t);
    const int64_t blocks = rows * n / tr.block_size;
    std::vector<uint8_t> w(blocks * tr.type_size);
    if (t == W::kF16 || t == W::kBF16) {
        const auto f = testing::random_floats(rng, size_t(rows * n), -1.0f, 1.0f);
        for (size_t i = 0; i < f.size(); ++i) {
            const uint16_t h = t == W::kF16 ? fp32_to_fp16(f[i]) : fp32_to_bf16(f[i]);
            std::memcpy(w.data() + 2 * i, &h, 2);
        }
        return w;
    }
    for (auto& b : w) b = uint8_t(rng());
    std::uniform_real_distribution<float> d(0.001f, 0.02f), m(-0.02f, 0.02f);
    for (int64_t i = 0; i < blocks; ++i) {
        uint8_t* b = w.data() + i * tr.type_size;
        switch (t) {
            case W::kQ4_0:
            case W::kQ5_0:
            case W::kQ8_0:
                put_half(b, d(rng));
                break;
            case W::kQ4_1:
            case W::kQ5_1:
                put_half(b, d(rng)), put_half(b + 2, m(rng));
                break;
            case W::kQ2_K:
                put_half(b + 80, d(rng)), put_half(b + 82, d(rng));
                break;
            case W::kQ3_K:
                put_half(b + 108, d(rng));
                break;
            case W::kQ4_K:
            case W::kQ5_K:
                put_half(b, d(rng)), put_half(b + 2, d(rng));
                break;
            case W::kQ6_K:
                put_half(b + 208, d(rng));
                break;
            default:
                break;
        }
    }
    return w;
}

std::vector<float> dequantize(W t, const void* src, int64_t n) {
    std::vector<float> out(n);
    EXPECT_TRUE(loader::dequantize_row(static_cast<loader::GgmlType>(t), src, out.data(), n).ok()) << name(t);
    return out;
}

// The activation row as the kernels see it, back in fp32.
std::vector<float> dequantize_activation(W t, const std::vector<uint8_t>& a, const std::vector<float>& x) {
    switch (kernels::ref::activation_format(t)) {
        case kernels::ref::ActFormat::kF32:
            return x;
        case kernels::ref::ActFormat::kQ8_0:
            return dequantize(W(8), a.data(), int64_t(x.size()));
        case kernels::ref::ActFormat::kQ8_1: {
            std::vector<float> out(x.size());
            EXPECT_TRUE(loader::dequantize_row(loader::GgmlType::kQ8_1, a.data(), out.data(), int64_t(x.size())).ok());
            return out;
        }
        case kernels::ref::ActFormat::kQ8_K: {
            std::vector<float> out(x.size());
            EXPECT_TRUE(loader::dequantize_row(loader::GgmlType::kQ8_K, a.data(), out.data(), int64_t(x.size())).ok());
            return out;
        }
    }
    return {};
}

std::vector<uint8_t> activation(W t, const std::vector<float>& x) {
    std::vector<uint8_t> a(kernels::ref::activation_row_bytes(t, int64_t(x.size())));
    kernels::ref::prepare_activation_row(t, x.data(), a.data(), int64_t(x.size()));
    return a;
}

TEST(TypedKernels, Q8KQuantizationBoundsAndBlockSums) {
    std::mt19937_64 rng(testing::test_seed() + 10);
    const int64_t n = 768;
    auto x = testing::random_floats(rng, n, -4, 4);
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero super-block
    std::vector<kernels::BlockQ8_K> q(n / 256);
    kernels::ref::quantize_row_q8_K(x.data(), q.data(), n);
    std::vector<float> back(n);
    ASSERT_TRUE(loader::dequantize_row(loader::GgmlType::kQ8_K, q.data(), back.data(), n).ok());
    for (int64_t i = 0; i < n; ++i) {
        ASSERT_LE(std::fabs(back[i] - x[i]), std::fabs(q[i / 256].d) * 0.5f * 1.0001f + 1e-7f) << i;
    }
    for (const auto& b : q) {
        for (int k = 0; k < 16; ++k) {
            int s = 0;
            for (int j = 0; j < 16; ++j) s += b.qs[16 * k + j];
            EXPECT_EQ(b.bsums[k], s);
        }
    }
}

// Every set's Q8_K quantizer (where it has one) writes the reference's bytes: the first element
// of largest magnitude picks the sign, ties round to even, all-zero blocks.
TEST(TypedKernels, Q8KQuantizerOfEverySetIsTheReference) {
    std::mt19937_64 rng(testing::test_seed() + 15);
    const int64_t n = 1280;
    auto x = testing::random_floats(rng, n, -4, 4);
    // Block 1: exact half-integers after scaling (max -127 -> iscale 1), ties to even.
    for (int j = 0; j < 256; ++j) x[256 + j] = float(int(rng() % 253) - 126) + 0.5f;
    x[256 + 7] = -127.0f;
    // Block 2: +a before -a of the same magnitude (the first one sets the sign).
    x[512 + 3] = 9.0f, x[512 + 200] = -9.0f;
    std::fill(x.begin() + 768, x.begin() + 1024, 0.0f);  // block 3 all zero
    std::vector<kernels::BlockQ8_K> want(n / 256), got(n / 256);
    kernels::ref::quantize_row_q8_K(x.data(), want.data(), n);
    for (int set = 0; set < num_quant_kernel_sets(); ++set) {
        const auto& k = quant_kernel_set(set);
        if (k.typed->quantize_q8_k == nullptr) continue;
        std::memset(got.data(), 0xab, got.size() * sizeof(got[0]));
        k.typed->quantize_q8_k(x.data(), got.data(), n);
        for (size_t b = 0; b < want.size(); ++b) {
            EXPECT_EQ(std::memcmp(&want[b], &got[b], sizeof(want[b])), 0) << k.isa << " block " << b;
        }
    }
}

// The common K-quant form reproduces every dequantized element: the layouts are right.
TEST(TypedKernels, KQuantUnpackMatchesDequantize) {
    std::mt19937_64 rng(testing::test_seed() + 11);
    for (W t : kKQuants) {
        const auto w = random_weights(t, 1, 1024, rng);
        const auto truth = dequantize(t, w.data(), 1024);
        kernels::ref::KUnpacked u;
        for (int b = 0; b < 4; ++b) {
            kernels::ref::unpack_function(t)(w.data() + b * traits(t).type_size, &u);
            for (int i = 0; i < 256; ++i) {
                const float a = u.d * float(u.scale[i / 16]) * float(u.q[i]), m = u.dmin * float(u.min[i / 16]);
                ASSERT_LT(u.q[i], 64) << name(t);
                ASSERT_NEAR(a - m, truth[256 * b + i], 1e-6f * (std::fabs(a) + std::fabs(m)) + 1e-9f)
                    << name(t) << " element " << 256 * b + i;
            }
        }
    }
}

// Reference dot = dot of the dequantized weight and dequantized activation, to float rounding.
TEST(TypedKernels, ReferenceDotMatchesDequantizedProduct) {
    std::mt19937_64 rng(testing::test_seed() + 12);
    for (W t : kTypes) {
        for (int64_t len : {32, 99, 256, 1536}) {
            const int64_t n = row_len(t, len);
            const auto w = random_weights(t, 1, n, rng);
            const auto x = testing::random_floats(rng, size_t(n), -3, 3);
            const auto a = activation(t, x);
            const auto wf = dequantize(t, w.data(), n);
            const auto af = dequantize_activation(t, a, x);
            double want = 0.0, mag = 0.0;
            for (int64_t i = 0; i < n; ++i) want += double(wf[i]) * af[i], mag += std::fabs(double(wf[i]) * af[i]);
            const float got = kernels::ref::vec_dot_typed(t, w.data(), a.data(), n);
            ASSERT_FALSE(std::isnan(got));
            // The K-quant terms d*scale*q and dmin*min can be far larger than their difference; and
            // Q8_1 activations (Q5_1's) carry each block's sum rounded to fp16 (relative 2^-11), which
            // the weight's min multiplies: both are bounded by ~5e-4 of the summed magnitudes.
            const bool coarse = (t >= W::kQ2_K && t <= W::kQ6_K) ||
                                kernels::ref::activation_format(t) == kernels::ref::ActFormat::kQ8_1;
            const double tol = 1e-5 * mag * (coarse ? 64 : 1) + 1e-5;
            EXPECT_NEAR(got, want, tol) << name(t) << " n=" << n;
        }
    }
}

TEST(TypedKernels, EverySetMatchesReference) {
    std::mt19937_64 rng(testing::test_seed() + 13);
    for (int set = 0; set < num_quant_kernel_sets(); ++set) {
        const auto& k = quant_kernel_set(set);
        ASSERT_NE(k.typed, nullptr) << k.isa;
        for (W t : kTypes) {
            for (int64_t len : {256, 99, 2048}) {
                const int64_t n = row_len(t, len);
                const auto w = random_weights(t, 1, n, rng);
                const size_t stride = kernels::ref::activation_row_bytes(t, n);
                std::vector<uint8_t> acts(4 * stride);
                for (int r = 0; r < 4; ++r) {
                    const auto x = testing::random_floats(rng, size_t(n), -2, 2);
                    kernels::ref::prepare_activation_row(t, x.data(), acts.data() + r * stride, n);
                }
                for (int rows = 1; rows <= 4; ++rows) {
                    float got[4];
                    k.typed->get(t)(w.data(), acts.data(), stride, rows, n, got);
                    for (int r = 0; r < rows; ++r) {
                        const float want = kernels::ref::vec_dot_typed(t, w.data(), acts.data() + r * stride, n);
                        ASSERT_FALSE(std::isnan(got[r]));
                        // Same integer sums; float order (and FMA contraction) may differ.
                        EXPECT_NEAR(got[r], want, 2e-5 * std::max(1.0f, std::fabs(want)) + 1e-3)
                            << k.isa << " " << name(t) << " n=" << n << " rows=" << rows;
                    }
                }
            }
        }
    }
}

// Every set's prefill tiles (where it has them): a full and a partial tile of weight rows, every
// activation row count up to 9 (the kernels take rows in groups), bias, against the reference dot.
TEST(TypedKernels, PrefillTilesOfEverySetMatchReference) {
    std::mt19937_64 rng(testing::test_seed() + 16);
    for (int set = 0; set < num_quant_kernel_sets(); ++set) {
        const auto& k = quant_kernel_set(set);
        if (k.typed->tile == nullptr) continue;
        for (W t : kTileTypes) {
            const auto* tile = k.typed->tile(t);
            if (tile == nullptr) continue;
            const int64_t n = row_len(t, 768 + 99);
            const size_t stride = kernels::ref::activation_row_bytes(t, n);
            const size_t w_row = traits(t).type_size * size_t(n / traits(t).block_size);
            for (int nw : {16, 7}) {
                const auto w = random_weights(t, nw, n, rng);
                std::vector<uint8_t> packed_buf(tile->packed_bytes(n) + 64);
                auto* packed =
                    reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(packed_buf.data()) + 63) & ~uintptr_t(63));
                tile->pack(w.data(), w_row, nw, n, packed);
                const auto bias = testing::random_floats(rng, size_t(nw));
                for (int64_t rows = 1; rows <= 9; ++rows) {
                    std::vector<uint8_t> acts(rows * stride);
                    for (int64_t r = 0; r < rows; ++r) {
                        const auto x = testing::random_floats(rng, size_t(n), -2, 2);
                        kernels::ref::prepare_activation_row(t, x.data(), acts.data() + r * stride, n);
                    }
                    const int64_t y_stride = nw + 3;
                    std::vector<float> y(rows * y_stride, -7.0f);
                    tile->gemm(packed, n, acts.data(), stride, rows, y.data(), y_stride, nw, bias.data());
                    for (int64_t r = 0; r < rows; ++r) {
                        for (int o = 0; o < y_stride; ++o) {
                            if (o >= nw) {
                                ASSERT_EQ(y[r * y_stride + o], -7.0f) << "wrote past the tile";
                                continue;
                            }
                            const float want =
                                kernels::ref::vec_dot_typed(t, w.data() + o * w_row, acts.data() + r * stride, n) +
                                bias[o];
                            EXPECT_NEAR(y[r * y_stride + o], want, 2e-5 * std::max(1.0f, std::fabs(want)) + 1e-3)
                                << k.isa << " " << name(t) << " nw=" << nw << " rows=" << rows << " row " << r
                                << " col " << o;
                        }
                    }
                }
            }
        }
    }
}

constexpr W kR16Types[] = {W::kQ4_K, W::kQ5_K, W::kQ6_K};

// The repacked layout (kquant_r16_ref.h) holds every row's super-blocks exactly: its scalar
// reading equals the GGUF block's common form, and rows past out_dim are zero.
TEST(TypedKernels, KQuantR16LayoutHoldsTheFileBlocks) {
    std::mt19937_64 rng(testing::test_seed() + 17);
    for (W t : kR16Types) {
        ASSERT_TRUE(kernels::ref::has_kquant_r16(t));
        const int64_t n = 1024, out = 37;
        const size_t row_bytes = traits(t).type_size * size_t(n / 256);
        const auto w = random_weights(t, out, n, rng);
        std::vector<uint8_t> r16(kernels::ref::kquant_r16_bytes(t, out, n), 0xcd);
        // Two calls (group ranges) fill the whole matrix.
        kernels::ref::repack_kquant_r16(t, w.data(), row_bytes, out, n, 0, 1, r16.data());
        kernels::ref::repack_kquant_r16(t, w.data(), row_bytes, out, n, 1, 3, r16.data());
        kernels::ref::KUnpacked got, want;
        for (int64_t o = 0; o < 48; ++o) {
            for (int64_t sb = 0; sb < n / 256; ++sb) {
                kernels::ref::unpack_kquant_r16(t, r16.data(), n, o, sb, &got);
                if (o >= out) {
                    ASSERT_EQ(got.d, 0.0f) << name(t) << " padding row " << o;
                    continue;
                }
                kernels::ref::unpack_function(t)(w.data() + o * row_bytes + sb * traits(t).type_size, &want);
                ASSERT_EQ(std::memcmp(got.q, want.q, sizeof got.q), 0) << name(t) << " row " << o << " sb " << sb;
                ASSERT_EQ(std::memcmp(got.scale, want.scale, sizeof got.scale), 0) << name(t) << " row " << o;
                ASSERT_EQ(std::memcmp(got.min, want.min, sizeof got.min), 0) << name(t) << " row " << o;
                ASSERT_EQ(got.d, want.d) << name(t) << " row " << o;
                ASSERT_EQ(got.dmin, want.dmin) << name(t) << " row " << o;
            }
        }
    }
}

// Every set's kernels on repacked K-quants (where it has them): decode (1-4 activation rows, a
// sub-range of groups, a partial last group, bias) against the reference dot on the file's rows,
// and the prefill tile unpacked from the repacked form equal to the one packed from the file.
TEST(TypedKernels, R16KernelsOfEverySetMatchReference) {
    std::mt19937_64 rng(testing::test_seed() + 18);
    for (int set = 0; set < num_quant_kernel_sets(); ++set) {
        const auto& k = quant_kernel_set(set);
        if (k.typed->r16 == nullptr) continue;
        for (W t : kR16Types) {
            const auto* r16k = k.typed->r16(t);
            ASSERT_NE(r16k, nullptr) << k.isa << " " << name(t);
            const int64_t n = 1280, out = 37, groups = kernels::ref::kquant_r16_groups(out);
            const size_t row_bytes = traits(t).type_size * size_t(n / 256);
            const auto w = random_weights(t, out, n, rng);
            std::vector<uint8_t> r16(kernels::ref::kquant_r16_bytes(t, out, n) + 64);
            auto* rp = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(r16.data()) + 63) & ~uintptr_t(63));
            kernels::ref::repack_kquant_r16(t, w.data(), row_bytes, out, n, 0, groups, rp);
            const size_t stride = kernels::ref::activation_row_bytes(t, n);
            std::vector<uint8_t> acts(4 * stride);
            for (int r = 0; r < 4; ++r) {
                const auto x = testing::random_floats(rng, size_t(n), -2, 2);
                kernels::ref::prepare_activation_row(t, x.data(), acts.data() + r * stride, n);
            }
            const auto bias = testing::random_floats(rng, size_t(out));
            std::vector<float> ref_r16(out);
            for (int rows = 1; rows <= 4; ++rows) {
                for (auto [g0, g1] : {std::pair<int64_t, int64_t>{0, groups}, {1, 2}}) {
                    const int64_t ys = out + 5;
                    std::vector<float> y(rows * ys, -7.0f);
                    r16k->gemv(rp, n, g0, g1, out, acts.data(), stride, rows, y.data(), ys, bias.data());
                    for (int r = 0; r < rows; ++r) {
                        kernels::ref::gemv_kquant_r16(
                            t, rp, n, out, reinterpret_cast<const kernels::BlockQ8_K*>(acts.data() + r * stride),
                            ref_r16.data());
                        for (int64_t o = 0; o < ys; ++o) {
                            const float v = y[r * ys + o];
                            if (o < 16 * g0 || o >= std::min(out, 16 * g1)) {
                                ASSERT_EQ(v, -7.0f) << k.isa << " " << name(t) << " wrote outside its groups, o=" << o;
                                continue;
                            }
                            const float want =
                                kernels::ref::vec_dot_typed(t, w.data() + o * row_bytes, acts.data() + r * stride, n);
                            ASSERT_EQ(ref_r16[o], want) << name(t) << " scalar r16 reference, row " << o;
                            ASSERT_FALSE(std::isnan(v));
                            // Same integer sums; float order (and FMA contraction) may differ.
                            EXPECT_NEAR(v, want + bias[o], 2e-5 * std::max(1.0f, std::fabs(want)) + 1e-3)
                                << k.isa << " " << name(t) << " rows=" << rows << " row " << r << " col " << o;
                        }
                    }
                }
            }
            // Prefill: the tile from the repacked group equals the tile packed from the file.
            const auto* tile = k.typed->tile(t);
            ASSERT_NE(tile, nullptr);
            const size_t tb = tile->packed_bytes(n);
            std::vector<uint8_t> a_buf(tb + 64), b_buf(tb + 64);
            auto align = [](std::vector<uint8_t>& v) {
                return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63));
            };
            uint8_t *from_r16 = align(a_buf), *from_file = align(b_buf);
            for (int64_t g = 0; g < groups; ++g) {
                const int nw = int(std::min<int64_t>(16, out - 16 * g));
                r16k->pack_tile(rp, n, g, from_r16);
                tile->pack(w.data() + 16 * g * row_bytes, row_bytes, nw, n, from_file);
                // u8 quads and int16 mins bit for bit; fp32 scales by value (0 * negative scale is -0).
                constexpr size_t kSb = 5696, kFs = 4096, kMn = 5120, kDm = 5632;
                for (int64_t sb = 0; sb < n / 256; ++sb) {
                    const uint8_t *pa = from_r16 + sb * kSb, *pb = from_file + sb * kSb;
                    ASSERT_EQ(std::memcmp(pa, pb, kFs), 0) << k.isa << " " << name(t) << " quads, group " << g;
                    ASSERT_EQ(std::memcmp(pa + kMn, pb + kMn, kDm - kMn), 0) << k.isa << " " << name(t) << " mins";
                    for (size_t f = 0; f < (kMn - kFs) / 4 + 16; ++f) {
                        const size_t at = f < (kMn - kFs) / 4 ? kFs + 4 * f : kDm + 4 * (f - (kMn - kFs) / 4);
                        float fa, fb;
                        std::memcpy(&fa, pa + at, 4), std::memcpy(&fb, pb + at, 4);
                        ASSERT_EQ(fa, fb) << k.isa << " " << name(t) << " scale float " << f << ", group " << g;
                    }
                }
            }
        }
    }
}

// The CPU backend end to end: decode (1, 3 rows) and prefill (17, 70 rows) shapes, threads,
// bias; on the file's bytes, and on the repacked copy where this CPU's kernels make one.
TEST(TypedKernels, CpuBackendMatmulMatchesReference) {
    std::mt19937_64 rng(testing::test_seed() + 14);
    auto cpu = backend::make_cpu_backend(3);
    const auto& best = backend::cpu::simd::quant_kernels();
    for (W t : kTypes) {
        const int64_t in = row_len(t, 512 + 99), out = 37;
        const auto w = random_weights(t, out, in, rng);
        const auto prepared = cpu->prepare_weight(w.data(), t, in, out);
        const bool repacks = best.typed->r16 != nullptr && best.typed->r16(t) != nullptr;
        EXPECT_EQ(prepared != nullptr, repacks) << name(t);
        const auto bias = testing::random_floats(rng, out);
        for (int64_t rows : {1, 3, 17, 70})
            for (const void* prep : {static_cast<const void*>(nullptr), prepared.get()}) {
                if (prep == nullptr && prepared != nullptr && rows == 70) continue;
                const auto x = testing::random_floats(rng, size_t(rows * in), -2, 2);
                std::vector<float> got(rows * out), want(rows * out);
                kernels::MatmulParams p{x.data(), w.data(), t, bias.data(), got.data(), rows, in, out};
                p.w_prepared = prep;
                cpu->matmul(p);
                kernels::ref::typed_matmul(t, w.data(), x.data(), want.data(), rows, in, out);
                for (int64_t i = 0; i < rows * out; ++i) {
                    want[i] += bias[i % out];
                    ASSERT_FALSE(std::isnan(got[i]));
                    ASSERT_NEAR(got[i], want[i], 2e-5 * std::max(1.0f, std::fabs(want[i])) + 1e-3)
                        << name(t) << " rows=" << rows << (prep ? " repacked" : "") << " element " << i;
                }
            }
    }
}

}  // namespace
}  // namespace lazyattn
