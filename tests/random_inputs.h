// Fresh random inputs for kernel tests: every run draws new values unless LAZYATTN_TEST_SEED
// is set, and the seed is printed so a failure can be replayed.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace lazyattn::testing {

inline uint64_t test_seed() {
    static const uint64_t seed = [] {
        const char* env = std::getenv("LAZYATTN_TEST_SEED");
        const uint64_t s = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
        std::printf("[random inputs] LAZYATTN_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
        return s;
    }();
    return seed;
}

inline std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Max |a-b| / max(|b|, floor) over all elements; fails on NaN or size mismatch.
// max |a - b| relative to the largest |b| (logits: a difference relative to their scale).
inline double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0.0, scale = 1e-6;
    for (float x : b) scale = std::max(scale, double(std::fabs(x)));
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
        worst = std::max(worst, std::fabs(double(a[i]) - b[i]) / scale);
    return worst;
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel_tol,
                         double abs_floor, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    double worst = 0.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_FALSE(std::isnan(got[i])) << what << ": NaN at " << i;
        const double err = std::abs(double(got[i]) - want[i]) / std::max(std::abs(double(want[i])), abs_floor);
        if (err > worst) {
            worst = err;
            worst_i = i;
        }
    }
    EXPECT_LE(worst, rel_tol) << what << ": worst element " << worst_i << " got " << got[worst_i] << " want "
                              << want[worst_i];
}

}  // namespace lazyattn::testing
