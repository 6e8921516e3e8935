// The cuBLASLt bf16 GEMM wrapper (y = x W^T, W row-major [n, k]) against kernels::ref::matmul in
// double on the same bf16 values, fp32 and bf16 outputs, odd shapes.
//
// Tolerance per element: |got - want| <= 1e-5 * sum_i |x_i w_i| (+ 2^-7 |want| for bf16 output):
// fp32 accumulation in any order stays far inside; a wrong transpose or stride does not.
// (The emulated build computes the same interface with a host loop: there is no cuBLAS on a CPU.)
#include <random>

#include "backends/cuda/cublas_gemm.h"
#include "cuda_test_util.h"

namespace lazyattn::cuda_test {
namespace {

using backends::cuda::GemmOutType;

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

}  // namespace
}  // namespace lazyattn::cuda_test
