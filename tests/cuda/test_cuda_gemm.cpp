// The cuBLASLt bf16 GEMM wrapper (y = x W^T, W row-major [n, k]) against kernels::ref::matmul in
// double on the same bf16 values, fp32 and bf16 outputs, odd shapes.
//
// Tolerance per element: |got - want| <= 1e-5 * sum_i |x_i w_i| (+ 2^-7 |want| for bf16 output):
// fp32 accumulation in any order stays far inside; a wrong transpose or stride does not.
// (The emulated build computes the same interface with a host loop: there is no cuBLAS on a CPU.)
#include <random>

#include "backend/cuda/cublas_gemm.h"
#include "cuda_test_util.h"

namespace lazyattn::cuda_test {
namespace {

using backend::cuda::GemmOutType;

TEST_F(CudaTest, GemmMatchesReference) {
    std::mt19937_64 rng(testing::test_seed() + 31);
    const int64_t shapes[][3] = {{1, 256, 64}, {17, 1000, 136}, {64, 24, 4096}, {5, 15, 64}, {128, 512, 512}};
    for (const auto& s : shapes) {
        const int64_t m = s[0], n = s[1], k = s[2];
        const std::vector<float> x = bf16_rounded(testing::random_floats(rng, size_t(m * k)));
        const std::vector<float> w = bf16_rounded(testing::random_floats(rng, size_t(n * k)));
        std::vector<float> want(size_t(m * n)), scale(size_t(m * n), 0.0f);
        kernels::ref::matmul(x.data(), w.data(), nullptr, want.data(), m, k, n);
        for (int64_t r = 0; r < m; ++r) {
            for (int64_t o = 0; o < n; ++o) {
                double a = 0.0;
                for (int64_t i = 0; i < k; ++i) a += std::abs(double(x[r * k + i]) * w[o * k + i]);
                scale[r * n + o] = float(a);
            }
        }
        DeviceBuffer<bf16> dx(to_bf16(x)), dw(to_bf16(w));
        DeviceBuffer<float> y32(size_t(m * n));
        DeviceBuffer<bf16> y16(size_t(m * n));
        LA_ASSERT_OK(backend().gemm({dx.get(), dw.get(), y32.get(), GemmOutType::kF32, m, n, k}));
        LA_ASSERT_OK(backend().gemm({dx.get(), dw.get(), y16.get(), GemmOutType::kBF16, m, n, k}));
        LA_ASSERT_OK(backend().synchronize());
        const std::vector<float> got32 = y32.download(), got16 = from_bf16(y16.download());
        const std::string what = "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
        for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(got32[i], want[i], 1e-5 * scale[i] + 1e-7) << what << " fp32, element " << i;
            ASSERT_NEAR(got16[i], want[i], 1e-5 * scale[i] + std::abs(want[i]) / 128.0 + 1e-7)
                << what << " bf16, element " << i;
        }
    }
}

// Operands at offsets (as Q/K/V slices of a fused projection are): each pointer alignment gets
// its own cached plan (an aligned plan may use loads an offset view cannot), and results match.
TEST_F(CudaTest, GemmOnOffsetOperandsGetsItsOwnPlan) {
    using backend::cuda::CublasGemm;
    using backend::cuda::pointer_alignment;
    EXPECT_EQ(pointer_alignment(reinterpret_cast<const void*>(uintptr_t(4096))), 256u);
    EXPECT_EQ(pointer_alignment(reinterpret_cast<const void*>(uintptr_t(4096 + 2))), 2u);
    EXPECT_EQ(pointer_alignment(reinterpret_cast<const void*>(uintptr_t(4096 + 48))), 16u);
    auto created = CublasGemm::create();
    LA_ASSERT_OK(created.status());
    CublasGemm& gemm = *created.value();
    std::mt19937_64 rng(testing::test_seed() + 32);
    const int64_t m = 5, n = 24, k = 64;
    const std::vector<float> x = bf16_rounded(testing::random_floats(rng, size_t(m * k)));
    const std::vector<float> w = bf16_rounded(testing::random_floats(rng, size_t(n * k)));
    std::vector<float> want(size_t(m * n));
    kernels::ref::matmul(x.data(), w.data(), nullptr, want.data(), m, k, n);
    // Device copies one element (x, y) or four (w) past an aligned start.
    std::vector<bf16> x_off(size_t(m * k) + 1, to_bf16(0.0f)), w_off(size_t(n * k) + 4, to_bf16(0.0f));
    std::copy_n(to_bf16(x).begin(), m * k, x_off.begin() + 1);
    std::copy_n(to_bf16(w).begin(), n * k, w_off.begin() + 4);
    DeviceBuffer<bf16> dx(to_bf16(x)), dw(to_bf16(w)), dx_off(x_off), dw_off(w_off);
    DeviceBuffer<float> y(size_t(m * n)), y_off(size_t(m * n) + 1);
    LA_ASSERT_OK(gemm.run({dx.get(), dw.get(), y.get(), GemmOutType::kF32, m, n, k}, nullptr));
    EXPECT_EQ(gemm.num_plans(), 1u);
    LA_ASSERT_OK(gemm.run({dx_off.get() + 1, dw_off.get() + 4, y_off.get() + 1, GemmOutType::kF32, m, n, k}, nullptr));
    EXPECT_EQ(gemm.num_plans(), 2u) << "offset operands reused the aligned operands' plan";
    LA_ASSERT_OK(gemm.run({dx.get(), dw.get(), y.get(), GemmOutType::kF32, m, n, k}, nullptr));
    EXPECT_EQ(gemm.num_plans(), 2u);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = y.download(), got_off = y_off.download();
    for (int64_t i = 0; i < m * n; ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-4) << "aligned, element " << i;
        ASSERT_NEAR(got_off[i + 1], want[i], 1e-4) << "offset, element " << i;
    }
}

}  // namespace
}  // namespace lazyattn::cuda_test
