#include "bench/proportions.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace lazyattn::bench {

Interval wilson_interval(int64_t successes, int64_t n, double z) {
    if (n <= 0) return {0, 1};
    const double p = double(successes) / double(n), nn = double(n), z2 = z * z;
    const double center = (p + z2 / (2 * nn)) / (1 + z2 / nn);
    const double half = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / (1 + z2 / nn);
    return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

double two_sided_binomial_half(int64_t k, int64_t n) {
    if (n <= 0) return 1;
    k = std::min(k, n - k);
    // Sum of C(n, i) / 2^n for i <= k, in logs (n may be in the thousands).
    double tail = 0;
    for (int64_t i = 0; i <= k; ++i) {
        const double log_term = std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) -
                                std::lgamma(double(n - i) + 1) - double(n) * std::log(2.0);
        tail += std::exp(log_term);
    }
    return std::min(1.0, 2 * tail);
}

PairedComparison compare_paired(const std::vector<bool>& a, const std::vector<bool>& b) {
    LA_CHECK(a.size() == b.size());
    PairedComparison c;
    c.n = int64_t(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        c.only_a += a[i] && !b[i];
        c.only_b += !a[i] && b[i];
    }
    if (c.n == 0) return c;
    const double n = double(c.n);
    c.difference = double(c.only_a - c.only_b) / n;
    // Per-question differences are +1, -1 or 0: their variance gives the interval.
    const double mean_sq = double(c.only_a + c.only_b) / n;
    const double var = std::max(0.0, mean_sq - c.difference * c.difference);
    const double half = 1.96 * std::sqrt(var / n);
    c.difference_ci = {c.difference - half, c.difference + half};
    c.p_value = two_sided_binomial_half(std::min(c.only_a, c.only_b), c.only_a + c.only_b);
    return c;
}

}  // namespace lazyattn::bench
