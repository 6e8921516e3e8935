// CPU RMSNorm, SwiGLU, RoPE and matmul against the scalar references on fresh random inputs with
// odd sizes.
#include "backend/backend.h"
#include "kernels/ref/reference_ops.h"
#include "random_inputs.h"

namespace lazyattn {
namespace {

class ElementwiseTest : public ::testing::TestWithParam<int> {
protected:
    std::mt19937_64 rng{testing::test_seed() + GetParam()};
    std::unique_ptr<backend::Backend> be = backend::make_cpu_backend(2);
};

TEST_P(ElementwiseTest, RmsNorm) {
    const int64_t rows = GetParam(), dim = 576;
    auto x = testing::random_floats(rng, rows * dim, -3, 3), w = testing::random_floats(rng, dim);
    std::vector<float> want(x.size()), got(x.size());
    kernels::ref::rmsnorm(x.data(), w.data(), want.data(), rows, dim, 1e-5f);
    be->rmsnorm(x.data(), w.data(), got.data(), rows, dim, 1e-5f);
    testing::expect_close(got, want, 1e-5, 1e-3, "rmsnorm");
}

TEST_P(ElementwiseTest, SwiGlu) {
    const int64_t n = int64_t(GetParam()) * 1536 + 7;
    auto g = testing::random_floats(rng, n, -8, 8), u = testing::random_floats(rng, n, -2, 2);
    for (const float extreme : {-1e4f, -100.0f, 100.0f, 0.0f})
        g[(size_t(extreme) * 31 + 5) % n] = extreme;  // exp limits
    std::vector<float> want(n), got(n);
    kernels::ref::swiglu(g.data(), u.data(), want.data(), n);
    be->swiglu(g.data(), u.data(), got.data(), n);
    testing::expect_close(got, want, 1e-5, 1e-3, "swiglu");
}

TEST_P(ElementwiseTest, GeGlu) {
    const int64_t n = int64_t(GetParam()) * 1536 + 7;
    auto g = testing::random_floats(rng, n, -8, 8), u = testing::random_floats(rng, n, -2, 2);
    for (const float extreme : {-1e4f, -100.0f, 100.0f, 0.0f})
        g[(size_t(extreme) * 31 + 5) % n] = extreme;  // tanh limits
    std::vector<float> want(n), got(n);
    kernels::ref::geglu(g.data(), u.data(), want.data(), n);
    be->geglu(g.data(), u.data(), got.data(), n);
    testing::expect_close(got, want, 1e-5, 1e-3, "geglu");
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

TEST_P(ElementwiseTest, RopeTableAndDirectAgreeWithReference) {
    const int32_t rows = GetParam(), heads = 3, d = 64;
    std::vector<float> inv_freq(d / 2);
    for (int i = 0; i < d / 2; ++i) inv_freq[i] = float(std::pow(100000.0, -2.0 * i / d));
    // A table covering positions [0, 64); rows use positions up to 20000 so both paths run.
    std::vector<float> table(64 * d);
    for (int p = 0; p < 64; ++p)
        for (int i = 0; i < d / 2; ++i) {
            table[(p * d / 2 + i) * 2] = float(std::cos(double(p) * inv_freq[i]));
            table[(p * d / 2 + i) * 2 + 1] = float(std::sin(double(p) * inv_freq[i]));
        }
    std::vector<int32_t> pos(rows);
    for (auto& p : pos) p = int32_t(rng() % 2 ? rng() % 64 : rng() % 20000);
    for (bool neox : {false, true}) {
        auto x = testing::random_floats(rng, int64_t(rows) * heads * d);
        auto want = x, got = x;
        kernels::RopeParams rope{inv_freq.data(), d, neox, 1.0f, table.data(), 64};
        kernels::ref::rope_apply({want.data(), pos.data(), rows, heads, d, rope});
        be->rope_apply({got.data(), pos.data(), rows, heads, d, rope});
        // Each output is a*cos - b*sin of inputs in [-1, 1]: its rounding error is a few ulps of 1
        // whatever the output's own size, so bound it absolutely (1e-6 = 8 ulps of 1.0). A floor of
        // 1e-2 asked 1e-7 of small outputs, under 2 ulps of the terms, and failed on some seeds.
        testing::expect_close(got, want, 1e-6, 1.0, neox ? "rope neox" : "rope interleaved");
    }
}

INSTANTIATE_TEST_SUITE_P(Rows, ElementwiseTest, ::testing::Values(1, 15, 16, 17, 99));

}  // namespace
}  // namespace lazyattn
