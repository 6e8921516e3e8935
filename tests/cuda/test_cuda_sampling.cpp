// Greedy argmax and top-k / top-p sampling on the device against a double-precision scalar
// reference of the same definition (sampling.h): candidates by logit descending then index,
// top-k, top-p over the top-k probabilities at temperature 1, then the first candidate at which
// the running weight exp((l - max) / T) reaches u * total.
//
// Tolerance: the token must be identical, except where the reference finds the decision within
// 1e-4 (relative) of a boundary (the top-p cut or the draw), where fp32 sums may go either way;
// such rows are counted and must stay rare. Argmax and tie-breaking are exact.
#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "backends/cuda/sampling.h"
#include "cuda_test_util.h"

namespace lazyattn::cuda_test {
namespace {

struct RefSample {
    int32_t token;
    bool ambiguous;
};

double clean(float x) { return std::isnan(x) ? -std::numeric_limits<double>::infinity() : double(x); }

RefSample reference_sample(const float* logits, int32_t n, float temperature, int32_t top_k, float top_p, float u) {
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return clean(logits[a]) > clean(logits[b]); });
    const double mx = clean(logits[order[0]]);
    if (!(temperature > 0.0f) || std::isinf(mx)) return {order[0], false};
    size_t keep = size_t(n);
    if (top_k > 0 && top_k < n) keep = size_t(top_k);
    bool ambiguous = false;
    if (top_p < 1.0f) {
        double sum = 0.0;
        for (size_t i = 0; i < keep; ++i) sum += std::exp(clean(logits[order[i]]) - mx);
        double cum = 0.0;
        for (size_t i = 0; i < keep; ++i) {
            cum += std::exp(clean(logits[order[i]]) - mx);
            if (std::abs(cum / sum - top_p) < 1e-4) ambiguous = true;
            if (cum / sum >= top_p) {
                keep = i + 1;
                break;
            }
        }
    }
    double total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += std::exp((clean(logits[order[i]]) - mx) / temperature);
    const double target = double(u) * total;
    double cum = 0.0;
    for (size_t i = 0; i < keep; ++i) {
        cum += std::exp((clean(logits[order[i]]) - mx) / temperature);
        if (std::abs(cum - target) < 1e-4 * total) ambiguous = true;
        if (cum >= target) return {order[i], ambiguous};
    }
    return {order[keep - 1], ambiguous};
}

int32_t reference_argmax(const float* logits, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i) {
        if (clean(logits[i]) > clean(logits[best])) best = i;
    }
    return best;
}

// Random logits with ties, a NaN and -inf entries.
std::vector<float> random_logits(std::mt19937_64& rng, int32_t rows, int32_t n, float sigma) {
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> x(size_t(rows) * n);
    for (auto& v : x) v = dist(rng);
    for (int32_t r = 0; r < rows && n > 4; ++r) {
        float* row = x.data() + size_t(r) * n;
        const int32_t top = int32_t(std::max_element(row, row + n) - row);
        row[rng() % n] = row[top];  // a tie at the maximum
        row[rng() % n] = row[rng() % n];
        row[rng() % n] = -std::numeric_limits<float>::infinity();
        if (r % 3 == 1) row[rng() % n] = std::numeric_limits<float>::quiet_NaN();
    }
    return x;
}

TEST_F(CudaTest, ArgmaxIsFirstMaximum) {
    std::mt19937_64 rng(testing::test_seed() + 21);
    for (int32_t n : {1, 15, 1000, 128256}) {
        const int32_t rows = 17;
        std::vector<float> x = random_logits(rng, rows, n, 3.0f);
        for (int32_t i = 0; i < n; ++i) x[i] = -std::numeric_limits<float>::infinity();  // row 0: all -inf
        DeviceBuffer<float> dx(x);
        DeviceBuffer<int32_t> tokens(static_cast<size_t>(rows));
        LA_ASSERT_OK(backend().argmax(dx.get(), n, rows, n, tokens.get()));
        LA_ASSERT_OK(backend().synchronize());
        const std::vector<int32_t> got = tokens.download();
        for (int32_t r = 0; r < rows; ++r) {
            EXPECT_EQ(got[r], reference_argmax(x.data() + size_t(r) * n, n)) << "vocab " << n << " row " << r;
        }
    }
}

TEST_F(CudaTest, SampleMatchesReference) {
    std::mt19937_64 rng(testing::test_seed() + 22);
    const float temperatures[] = {0.0f, 0.7f, 1.0f, 1.5f};
    const float top_ps[] = {1.0f, 0.9f, 0.5f, 0.01f};
    int ambiguous = 0, total = 0;
    for (int32_t n : {15, 1000, 128256}) {
        const int32_t rows = 33;
        const int32_t top_ks[] = {0, 1, 5, 50, n};
        const std::vector<float> x = random_logits(rng, rows, n, n > 1000 ? 2.0f : 3.0f);
        std::vector<float> temp(rows), top_p(rows), uniform(rows);
        std::vector<int32_t> top_k(rows);
        std::uniform_real_distribution<float> u01(0.0f, 1.0f);
        for (int32_t r = 0; r < rows; ++r) {
            temp[r] = temperatures[r % 4];
            top_k[r] = top_ks[(r / 4) % 5];
            top_p[r] = top_ps[(r / 2 + r / 5) % 4];
            uniform[r] = r == 5 ? 0.0f : (r == 6 ? 0.99999f : u01(rng));
        }
        DeviceBuffer<float> dx(x), dt(temp), dp(top_p), du(uniform);
        DeviceBuffer<int32_t> dk(top_k), tokens(static_cast<size_t>(rows));
        LA_ASSERT_OK(backend().sample({dx.get(), n, rows, n, dt.get(), dk.get(), dp.get(), du.get(), tokens.get()}));
        LA_ASSERT_OK(backend().synchronize());
        const std::vector<int32_t> got = tokens.download();
        for (int32_t r = 0; r < rows; ++r) {
            const RefSample want = reference_sample(x.data() + size_t(r) * n, n, temp[r], top_k[r], top_p[r], uniform[r]);
            ++total;
            if (want.ambiguous) {
                ++ambiguous;
                continue;
            }
            EXPECT_EQ(got[r], want.token) << "vocab " << n << " row " << r << " T " << temp[r] << " k " << top_k[r]
                                          << " p " << top_p[r] << " u " << uniform[r];
        }
    }
    EXPECT_LE(ambiguous * 10, total) << "too many rows at a decision boundary for the test to mean anything";
}

TEST_F(CudaTest, SampleBreaksTiesByIndex) {
    const int32_t n = 1000;
    std::vector<float> x(size_t(3) * n, 2.5f);  // three rows of equal logits
    const std::vector<float> temp = {1.0f, 1.0f, 0.5f}, top_p = {1.0f, 1.0f, 0.0015f}, uniform = {0.5f, 0.5f, 0.9f};
    const std::vector<int32_t> top_k = {3, 0, 0};
    DeviceBuffer<float> dx(x), dt(temp), dp(top_p), du(uniform);
    DeviceBuffer<int32_t> dk(top_k), tokens(3);
    LA_ASSERT_OK(backend().sample({dx.get(), n, 3, n, dt.get(), dk.get(), dp.get(), du.get(), tokens.get()}));
    LA_ASSERT_OK(backend().synchronize());
    const std::vector<int32_t> got = tokens.download();
    EXPECT_EQ(got[0], 1) << "top-3 of ties keeps indices 0, 1, 2; u = 0.5 picks the second";
    EXPECT_EQ(got[1], 499) << "1000 equal weights, u = 0.5: the 500th candidate";
    EXPECT_EQ(got[2], 1) << "top-p 0.0015 of 1000 ties keeps indices 0 and 1";
}

}  // namespace
}  // namespace lazyattn::cuda_test
