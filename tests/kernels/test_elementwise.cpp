// CPU RMSNorm, SwiGLU, GeGLU, RoPE, the token bitmask and matmul against the scalar references on fresh random
// inputs with odd sizes: the shapes every backend is checked on (op_cases.h), and the CPU's own
// rows for RoPE's magnitude and the matmul.
#include <cstring>

#include "backend/backend.h"
#include "backend/cpu/elementwise_cpu.h"
#include "kernels/ref/reference_ops.h"
#include "op_cases.h"
#include "random_inputs.h"

namespace lazyattn {
namespace {

class ElementwiseTest : public ::testing::TestWithParam<int> {
protected:
    std::mt19937_64 rng{testing::test_seed() + GetParam()};
    std::unique_ptr<backend::Backend> be = backend::make_cpu_backend(2);
};

namespace op_cases = testing::op_cases;

class OpCasesTest : public ::testing::Test {
protected:
    std::mt19937_64 rng{testing::test_seed() + 5};
    std::unique_ptr<backend::Backend> be = backend::make_cpu_backend(2);
};

TEST_F(OpCasesTest, RmsNorm) {
    for (const auto [rows, dim] : op_cases::norm_shapes()) {
        auto x = testing::random_floats(rng, rows * dim, -3, 3), w = testing::random_floats(rng, dim);
        std::vector<float> want(x.size()), got(x.size());
        kernels::ref::rmsnorm(x.data(), w.data(), want.data(), rows, dim, 1e-5f);
        be->rmsnorm(x.data(), w.data(), got.data(), rows, dim, 1e-5f);
        testing::expect_close(got, want, 1e-5, 1e-3,
                              ("rmsnorm " + std::to_string(rows) + "x" + std::to_string(dim)).c_str());
    }
}

// Structured output's token mask (the grammar matcher's) on the shapes the CUDA kernel is checked
// on, bit for bit against the definition: all, none, one, sparse and dense rows.
TEST_F(OpCasesTest, TokenBitmask) {
    for (const auto [n, words] : op_cases::token_mask_shapes()) {
        // Patterns: every bit set (padding too), none, one token, about 1 in 97, about 3 in 4.
        for (int pattern = 0; pattern < 5; ++pattern) {
            std::vector<int32_t> mask(words, pattern == 0 ? -1 : 0);
            const int32_t single = int32_t(rng() % n);
            for (int32_t i = 0; i < n && i / 32 < words && pattern >= 2; ++i) {
                const bool on = pattern == 2 ? i == single : pattern == 3 ? rng() % 97 == 0 : rng() % 4 != 0;
                if (on) mask[i / 32] |= int32_t(1u << (i % 32));
            }
            auto x = testing::random_floats(rng, n, -3, 3);
            std::vector<float> want = x;
            kernels::ref::apply_token_bitmask(want.data(), 1, n, mask.data(), words);
            backend::cpu::apply_token_bitmask(x.data(), n, mask.data(), words);
            ASSERT_EQ(std::memcmp(x.data(), want.data(), x.size() * sizeof(float)), 0)
                << "token bitmask v" << n << " w" << words << " pattern " << pattern;
        }
    }
}

// Gate values at the exp and tanh limits among the random ones.
std::vector<float> glu_gate(std::mt19937_64& rng, int64_t n) {
    auto g = testing::random_floats(rng, n, -8, 8);
    for (const float extreme : {-1e4f, -100.0f, 100.0f, 0.0f}) g[(size_t(extreme) * 31 + 5) % size_t(n)] = extreme;
    return g;
}

TEST_F(OpCasesTest, SwiGlu) {
    for (const int64_t n : op_cases::glu_sizes()) {
        auto g = glu_gate(rng, n), u = testing::random_floats(rng, n, -2, 2);
        std::vector<float> want(n), got(n);
        kernels::ref::swiglu(g.data(), u.data(), want.data(), n);
        be->swiglu(g.data(), u.data(), got.data(), n);
        testing::expect_close(got, want, 1e-5, 1e-3, ("swiglu n " + std::to_string(n)).c_str());
    }
}

TEST_F(OpCasesTest, GeGlu) {
    for (const int64_t n : op_cases::glu_sizes()) {
        auto g = glu_gate(rng, n), u = testing::random_floats(rng, n, -2, 2);
        std::vector<float> want(n), got(n);
        kernels::ref::geglu(g.data(), u.data(), want.data(), n);
        be->geglu(g.data(), u.data(), got.data(), n);
        testing::expect_close(got, want, 1e-5, 1e-3, ("geglu n " + std::to_string(n)).c_str());
    }
    // The definition's landmarks: gelu(0) = 0, gelu(x) ~ x for large x, ~ 0 for very negative x,
    // and gelu_tanh(1) = 0.841192 (PyTorch's gelu(approximate="tanh")).
    const float x[] = {0.0f, 1.0f, 30.0f, -30.0f}, one[] = {1.0f, 1.0f, 1.0f, 1.0f};
    float y[4];
    be->geglu(x, one, y, 4);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_NEAR(y[1], 0.841192f, 1e-5f);
    EXPECT_FLOAT_EQ(y[2], 30.0f);
    EXPECT_NEAR(y[3], 0.0f, 1e-6f);
}

// Every RoPE shape at every row count, half the rows inside the shape's table (when it has one)
// and half past it, so the table and the direct path both run.
TEST_F(OpCasesTest, RopeTableAndDirectAgreeWithReference) {
    constexpr int32_t kTablePositions = 64;
    for (const op_cases::RopeShape& shape : op_cases::rope_shapes()) {
        const int32_t d = shape.head_dim, rot = d / shape.rotary_divisor;
        std::vector<float> inv_freq(size_t(rot / 2));
        for (int i = 0; i < rot / 2; ++i) inv_freq[size_t(i)] = float(std::pow(100000.0, -2.0 * i / rot));
        std::vector<float> table(size_t(kTablePositions) * size_t(rot));
        for (int p = 0; p < kTablePositions; ++p)
            for (int i = 0; i < rot / 2; ++i) {
                table[size_t((p * rot / 2 + i) * 2)] = float(std::cos(double(p) * inv_freq[size_t(i)]));
                table[size_t((p * rot / 2 + i) * 2 + 1)] = float(std::sin(double(p) * inv_freq[size_t(i)]));
            }
        for (const int32_t rows : op_cases::rope_rows()) {
            std::vector<int32_t> pos(static_cast<size_t>(rows));
            for (auto& p : pos) p = int32_t(rng() % 2 ? rng() % kTablePositions : rng() % 20000);
            auto x = testing::random_floats(rng, int64_t(rows) * shape.num_heads * d);
            auto want = x, got = x;
            kernels::RopeParams rope{inv_freq.data(),
                                     rot,
                                     shape.neox,
                                     1.0f,
                                     shape.table ? table.data() : nullptr,
                                     shape.table ? kTablePositions : 0};
            kernels::ref::rope_apply({want.data(), pos.data(), rows, shape.num_heads, d, rope});
            be->rope_apply({got.data(), pos.data(), rows, shape.num_heads, d, rope});
            // Each output is a*cos - b*sin of inputs in [-1, 1]: its rounding error is a few ulps
            // of 1 whatever the output's own size, so bound it absolutely (1e-6 = 8 ulps of 1.0).
            // A floor of 1e-2 asked 1e-7 of small outputs, under 2 ulps of the terms, and failed
            // on some seeds.
            const std::string what = "rope d " + std::to_string(d) + " heads " + std::to_string(shape.num_heads) +
                                     (shape.neox ? " neox" : " interleaved") + " rotary " + std::to_string(rot) +
                                     (shape.table ? " table" : "") + " rows " + std::to_string(rows);
            testing::expect_close(got, want, 1e-6, 1.0, what.c_str());
        }
    }
}

// ggml's attn_factor (RopeParams::mscale): the rotated dims grow by it, the others stay, in the
// table and in the direct path; a rotation by 0 is then exactly a scaling of the rotated dims.
TEST_P(ElementwiseTest, RopeMagnitudeScalesOnlyTheRotatedDims) {
    const int32_t rows = GetParam(), heads = 2, d = 64, rot = 48;
    const float mscale = 1.3f;
    std::vector<float> inv_freq(rot / 2);
    for (int i = 0; i < rot / 2; ++i) inv_freq[i] = float(std::pow(10000.0, -2.0 * i / rot));
    std::vector<float> table(16 * rot);
    for (int p = 0; p < 16; ++p)
        for (int i = 0; i < rot / 2; ++i) {
            table[(p * rot / 2 + i) * 2] = float(std::cos(double(p) * inv_freq[i]) * mscale);
            table[(p * rot / 2 + i) * 2 + 1] = float(std::sin(double(p) * inv_freq[i]) * mscale);
        }
    std::vector<int32_t> pos(rows);
    for (auto& p : pos) p = int32_t(rng() % 2 ? rng() % 16 : rng() % 5000);
    for (bool neox : {false, true}) {
        auto x = testing::random_floats(rng, int64_t(rows) * heads * d);
        auto want = x, got = x;
        kernels::RopeParams rope{inv_freq.data(), rot, neox, 1.0f, table.data(), 16};
        rope.mscale = mscale;
        kernels::ref::rope_apply({want.data(), pos.data(), rows, heads, d, rope});
        be->rope_apply({got.data(), pos.data(), rows, heads, d, rope});
        // Absolute bound, as in RopeTableAndDirectAgreeWithReference below: 1e-6 of mscale.
        testing::expect_close(got, want, 1e-6, mscale, "rope with mscale");
        std::vector<int32_t> zero(rows, 0);
        auto scaled = x;
        be->rope_apply({scaled.data(), zero.data(), rows, heads, d, rope});
        for (int64_t i = 0; i < int64_t(x.size()); ++i) {
            const bool rotated = i % d < rot;
            ASSERT_NEAR(scaled[i], rotated ? x[i] * mscale : x[i], 1e-6) << i;
        }
    }
}

TEST_P(ElementwiseTest, MatmulWithBias) {
    const int64_t rows = GetParam(), in = 99, out = 45;
    auto x = testing::random_floats(rng, rows * in), w = testing::random_floats(rng, out * in),
         b = testing::random_floats(rng, out);
    std::vector<float> want(rows * out), got(rows * out);
    kernels::ref::matmul(x.data(), w.data(), b.data(), want.data(), rows, in, out);
    be->matmul({x.data(), w.data(), kernels::GgmlType::kF32, b.data(), got.data(), rows, in, out});
    // Sums of 99 products of magnitude <= 1: bound the error by the terms, not the result.
    testing::expect_close(got, want, 1e-4, 1.0, "matmul");
}

INSTANTIATE_TEST_SUITE_P(Rows, ElementwiseTest, ::testing::Values(1, 15, 16, 17, 99));

}  // namespace
}  // namespace lazyattn
