// The quantized matmul: every SIMD kernel set this CPU runs (AVX-512 VNNI, AVX2, scalar) against
// the scalar reference, and the whole quantized product against dequantize-then-fp32 within the
// bound that 8-bit activations allow. Fresh random inputs, odd sizes.
#include <cstring>

#include "backend/backend.h"
#include "backend/cpu/simd/quant_dot.h"
#include "core/fp16.h"
#include "kernels/ref/quant_ref.h"
#include "loader/dequantize.h"
#include "loader/quantize.h"
#include "random_inputs.h"

namespace lazyattn {
namespace {

using backend::cpu::simd::num_quant_kernel_sets;
using backend::cpu::simd::quant_kernel_set;
using kernels::GgmlType;

constexpr GgmlType kTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ8_0};

std::vector<uint8_t> quantize_weights(GgmlType t, const std::vector<float>& w) {
    auto q = loader::quantize(static_cast<loader::GgmlType>(t), w.data(), int64_t(w.size()));
    EXPECT_TRUE(q.ok());
    return *q;
}

TEST(QuantKernels, ActivationQuantizationIsBitIdenticalToReference) {
    std::mt19937_64 rng(testing::test_seed());
    std::printf("[quant kernels] sets on this CPU:");
    for (int set = 0; set < num_quant_kernel_sets(); ++set) std::printf(" %s", quant_kernel_set(set).isa);
    std::printf("\n");
    for (int set = 0; set < num_quant_kernel_sets(); ++set) {
        const auto& k = quant_kernel_set(set);
        for (int64_t n : {32, 64, 576, 1536}) {
            auto x = testing::random_floats(rng, n, -5, 5);
            std::fill(x.begin(), x.begin() + 32, 0.0f);  // an all-zero block
            if (n > 40) x[40] = 1e-30f;                  // a tiny value
            std::vector<kernels::BlockQ8_0> a(n / 32), b(n / 32);
            std::vector<kernels::BlockQ8_1> c(n / 32), d(n / 32);
            k.quantize_q8_0(x.data(), a.data(), n);
            kernels::ref::quantize_row_q8_0(x.data(), b.data(), n);
            k.quantize_q8_1(x.data(), c.data(), n);
            kernels::ref::quantize_row_q8_1(x.data(), d.data(), n);
            EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])), 0) << k.isa << " q8_0 n=" << n;
            EXPECT_EQ(std::memcmp(c.data(), d.data(), c.size() * sizeof(c[0])), 0) << k.isa << " q8_1 n=" << n;
        }
    }
}

TEST(QuantKernels, DotProductsMatchReference) {
    std::mt19937_64 rng(testing::test_seed() + 1);
    for (int set = 0; set < num_quant_kernel_sets(); ++set) {
        const auto& k = quant_kernel_set(set);
        for (GgmlType t : kTypes) {
            const int64_t n = 1536, nb = n / 32;
            const auto w = quantize_weights(t, testing::random_floats(rng, n));
            const size_t stride = nb * kernels::activation_block_bytes(t);
            std::vector<uint8_t> xq(4 * stride);
            for (int r = 0; r < 4; ++r) {
                auto x = testing::random_floats(rng, n, -3, 3);
                auto quantize = kernels::uses_q8_1(t) ? kernels::ref::quantize_row_q8_1 : nullptr;
                if (quantize != nullptr) {
                    quantize(x.data(), reinterpret_cast<kernels::BlockQ8_1*>(xq.data() + r * stride), n);
                } else {
                    kernels::ref::quantize_row_q8_0(x.data(),
                                                    reinterpret_cast<kernels::BlockQ8_0*>(xq.data() + r * stride), n);
                }
            }
            for (int rows = 1; rows <= 4; ++rows) {
                float got[4];
                k.dot(t)(w.data(), xq.data(), stride, rows, nb, got);
                for (int r = 0; r < rows; ++r) {
                    const float want = kernels::ref::vec_dot(t, w.data(), xq.data() + r * stride, n);
                    // Same integer sums; only the float accumulation order differs.
                    EXPECT_NEAR(got[r], want, 1e-5 * std::max(1.0f, std::fabs(want)) + 1e-3)
                        << k.isa << " type " << int(t);
                }
            }
        }
    }
}

// The register-tiled kernels (gemv for decode, repacked gemm tiles for prefill) of every set that
// has them: activations bit-identical to the reference's Q8 blocks, results equal to the reference
// dot products up to float summation order (the integer sums are exact).
TEST(QuantKernels, TiledGemvAndGemmMatchReference) {
    std::mt19937_64 rng(testing::test_seed() + 2);
    for (int set = 0; set < num_quant_kernel_sets(); ++set) {
        const auto* g = quant_kernel_set(set).gemm;
        if (g == nullptr) continue;
        for (GgmlType t : kTypes) {
            for (int64_t n : {32, 96, 576}) {
                const int64_t nb = n / 32, out = 37, rows = 9;
                const auto w = quantize_weights(t, testing::random_floats(rng, out * n));
                const size_t rb = nb * kernels::weight_block_bytes(t);
                const auto x = testing::random_floats(rng, rows * n, -3, 3);
                std::vector<kernels::BlockQ8_1> xq(rows * nb);
                for (int64_t r = 0; r < rows; ++r)
                    kernels::ref::quantize_row_q8_1(x.data() + r * n, xq.data() + r * nb, n);
                std::vector<uint8_t> ref_x(nb * kernels::activation_block_bytes(t));
                auto want = [&](int64_t r, int64_t o) {
                    for (int64_t b = 0; b < nb; ++b) {  // the reference's activation blocks for type t
                        const auto& q = xq[r * nb + b];
                        if (kernels::uses_q8_1(t)) {
                            std::memcpy(ref_x.data() + b * sizeof(q), &q, sizeof(q));
                        } else {
                            kernels::BlockQ8_0 q0{q.d, {}};
                            std::memcpy(q0.qs, q.qs, 32);
                            std::memcpy(ref_x.data() + b * sizeof(q0), &q0, sizeof(q0));
                        }
                    }
                    return kernels::ref::vec_dot(t, w.data() + o * rb, ref_x.data(), n);
                };
                for (bool pairs : {true, false}) {
                    std::vector<uint8_t> scratch(backend::cpu::simd::QuantActs::bytes(rows, nb));
                    const auto a =
                        backend::cpu::simd::QuantActs::in(scratch.data(), rows, nb, pairs && t != GgmlType::kQ8_0);
                    for (int64_t r = 0; r < rows; ++r) g->prepare_row(x.data() + r * n, a, r, t);
                    for (int64_t r = 0; r < rows; ++r) {
                        for (int64_t b = 0; b < nb; ++b) {
                            EXPECT_EQ(a.ds_row(r)[2 * b], fp16_to_fp32(xq[r * nb + b].d));
                            EXPECT_EQ(a.ds_row(r)[2 * b + 1], fp16_to_fp32(xq[r * nb + b].s));
                        }
                    }
                    const int kind = backend::cpu::simd::QuantGemmKernels::kind(t);
                    auto check = [&](const std::vector<float>& y, const char* path) {
                        for (int64_t r = 0; r < rows; ++r) {
                            for (int64_t o = 0; o < out; ++o) {
                                const float ref = want(r, o);
                                EXPECT_NEAR(y[r * out + o], ref, 1e-5 * std::max(1.0f, std::fabs(ref)) + 1e-4)
                                    << path << " type " << int(t) << " n " << n << " row " << r << " out " << o;
                            }
                        }
                    };
                    std::vector<float> y(rows * out, -9.0f);
                    if (pairs) {  // gemv (Q4: pair order; Q8_0: natural order)
                        for (int64_t r = 0; r < rows; r += 4) {
                            g->gemv[kind](w.data(), rb, 0, out, a.from_row(r), int(std::min<int64_t>(4, rows - r)),
                                          y.data() + r * out, out, nullptr);
                        }
                        check(y, "gemv");
                        continue;
                    }
                    // gemm on tiles repacked per call (natural order)
                    std::vector<uint8_t> buf(
                        backend::cpu::simd::kGemmTileRows * nb * backend::cpu::simd::kPackedBytesPerRowBlock + 64);
                    auto* packed =
                        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
                    for (int64_t o0 = 0; o0 < out; o0 += backend::cpu::simd::kGemmTileRows) {
                        const int nw = int(std::min<int64_t>(backend::cpu::simd::kGemmTileRows, out - o0));
                        g->pack[kind](w.data() + o0 * rb, rb, nw, nb, packed);
                        g->gemm_tile[kind](packed, nb, a, 0, rows, y.data() + o0, out, nw, nullptr);
                    }
                    check(y, "gemm");
                    if (g->repack_r16[kind] == nullptr) continue;
                    // Weights repacked at load (16-row groups): gemv in two slices of groups, as two
                    // threads would split it, and gemm tiles unpacked from the repacked form.
                    std::vector<uint8_t> r16(backend::cpu::simd::r16_bytes(t, out, nb));
                    g->repack_r16[kind](w.data(), rb, out, nb, r16.data());
                    const int64_t groups = (out + backend::cpu::simd::kR16Rows - 1) / backend::cpu::simd::kR16Rows;
                    std::fill(y.begin(), y.end(), -9.0f);
                    for (int64_t r = 0; r < rows; r += 4) {
                        for (const auto& [g0, g1] : {std::pair<int64_t, int64_t>{0, 1}, {1, groups}}) {
                            g->gemv_r16[kind](r16.data(), nb, g0, g1, out, a.from_row(r),
                                              int(std::min<int64_t>(4, rows - r)), y.data() + r * out, out, nullptr);
                        }
                    }
                    check(y, "gemv on repacked weights");
                    std::fill(y.begin(), y.end(), -9.0f);
                    for (int64_t tile = 0; tile * backend::cpu::simd::kGemmTileRows < out; ++tile) {
                        const int64_t o0 = tile * backend::cpu::simd::kGemmTileRows;
                        const int nw = int(std::min<int64_t>(backend::cpu::simd::kGemmTileRows, out - o0));
                        g->pack_from_r16[kind](r16.data(), nb, tile, groups, packed);
                        g->gemm_tile[kind](packed, nb, a, 0, rows, y.data() + o0, out, nw, nullptr);
                    }
                    check(y, "gemm on repacked weights");
                }
            }
        }
    }
}

class QuantMatmulTest : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(QuantMatmulTest, BackendMatchesReferenceAndDequantizedFp32) {
    const auto [rows, in, out] = GetParam();
    std::mt19937_64 rng(testing::test_seed() + rows * 7 + out);
    auto be = backend::make_cpu_backend(2);
    for (GgmlType t : kTypes) {
        const auto wf = testing::random_floats(rng, int64_t(out) * in);
        const auto w = quantize_weights(t, wf);
        const auto x = testing::random_floats(rng, int64_t(rows) * in, -4, 4);
        const auto bias = testing::random_floats(rng, out);
        std::vector<float> want(int64_t(rows) * out);
        kernels::ref::quant_matmul(t, w.data(), x.data(), want.data(), rows, in, out);
        // As loaded (GGUF layout) and, where the CPU has repacked kernels, as the backend prepares it.
        const auto wt = static_cast<kernels::GgmlType>(t);
        const auto prepared = be->prepare_weight(w.data(), wt, in, out);
        std::vector<const void*> layouts{nullptr};
        if (prepared != nullptr) layouts.push_back(prepared.get());
        for (const void* w_prepared : layouts) {
            SCOPED_TRACE(w_prepared != nullptr ? "repacked weights" : "GGUF layout");
            std::vector<float> got(int64_t(rows) * out, -9.0f);
            be->matmul({x.data(), w.data(), wt, bias.data(), got.data(), rows, in, out, w_prepared});
            // Dequantized weights in fp32: the only difference is the 8-bit activations.
            std::vector<float> wd(wf.size());
            ASSERT_TRUE(
                loader::dequantize_row(static_cast<loader::GgmlType>(t), w.data(), wd.data(), int64_t(wd.size())).ok());
            for (int r = 0; r < rows; ++r) {
                for (int o = 0; o < out; ++o) {
                    double exact = 0.0, bound = 0.0;
                    for (int b = 0; b < in / 32; ++b) {
                        float amax = 0.0f;
                        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[r * in + b * 32 + j]));
                        double wsum = 0.0;
                        for (int j = 0; j < 32; ++j) {
                            const int i = b * 32 + j;
                            exact += double(wd[int64_t(o) * in + i]) * x[r * in + i];
                            wsum += std::fabs(wd[int64_t(o) * in + i]);
                        }
                        // Each activation is off by at most half a step (d = amax/127) plus the fp16
                        // rounding of d (<= 127 d 2^-11); Q8_1's stored sum adds fp16 rounding too.
                        bound += wsum * (amax / 127.0) * (0.5 + 127.0 / 2048.0) + 32.0 * amax * 1.0 / 2048.0;
                    }
                    const float y = got[int64_t(r) * out + o] - bias[o];
                    ASSERT_FALSE(std::isnan(y));
                    EXPECT_NEAR(got[int64_t(r) * out + o], want[int64_t(r) * out + o] + bias[o],
                                1e-4 * (1.0 + std::fabs(want[int64_t(r) * out + o])))
                        << "type " << int(t) << " row " << r << " out " << o;
                    EXPECT_NEAR(y, exact, bound + 1e-4) << "type " << int(t) << " row " << r << " out " << o;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, QuantMatmulTest,
                         ::testing::Values(std::make_tuple(1, 32, 1), std::make_tuple(1, 576, 15),
                                           std::make_tuple(3, 64, 16), std::make_tuple(4, 96, 17),
                                           std::make_tuple(5, 576, 99), std::make_tuple(17, 1536, 33),
                                           std::make_tuple(99, 128, 64)));

}  // namespace
}  // namespace lazyattn

namespace lazyattn {
namespace {

// Products sharing one input (Q, K, V) run as one op give exactly what they give one by one, for
// the qualifying case (decode rows, repacked weights) and the fallbacks (prefill rows, GGUF layout).
TEST(QuantMatmulShared, SharedInputEqualsOneByOne) {
    std::mt19937_64 rng(testing::test_seed() + 5);
    auto be = backend::make_cpu_backend(2);
    const int64_t in = 576;
    const int64_t outs[] = {576, 192, 37};
    for (GgmlType t : {GgmlType::kQ4_1, GgmlType::kQ4_0, GgmlType::kQ8_0}) {
        for (int64_t rows : {1, 3, 9}) {
            const auto x = testing::random_floats(rng, rows * in, -3, 3);
            std::vector<std::vector<uint8_t>> w;
            std::vector<std::shared_ptr<const void>> prepared;
            std::vector<std::vector<float>> one(3), fused(3);
            std::vector<kernels::MatmulParams> ps;
            for (int i = 0; i < 3; ++i) {
                w.push_back(quantize_weights(t, testing::random_floats(rng, outs[i] * in)));
                prepared.push_back(be->prepare_weight(w[i].data(), static_cast<kernels::GgmlType>(t), in, outs[i]));
                one[i].assign(rows * outs[i], -1.0f);
                fused[i].assign(rows * outs[i], -2.0f);
            }
            for (int i = 0; i < 3; ++i) {
                be->matmul({x.data(), w[i].data(), static_cast<kernels::GgmlType>(t), nullptr, one[i].data(), rows, in,
                            outs[i], prepared[i].get()});
                ps.push_back({x.data(), w[i].data(), static_cast<kernels::GgmlType>(t), nullptr, fused[i].data(), rows,
                              in, outs[i], prepared[i].get()});
            }
            be->matmuls(ps.data(), 3);
            for (int i = 0; i < 3; ++i)
                EXPECT_EQ(fused[i], one[i]) << "type " << int(t) << " rows " << rows << " matrix " << i;
        }
    }
}

}  // namespace
}  // namespace lazyattn
