// Confidence intervals and paired tests for accuracies (the quality benchmark's statistics).
#pragma once

#include <cstdint>
#include <vector>

namespace lazyattn::bench {

struct Interval {
    double low = 0, high = 0;
};

// Wilson score interval of a proportion successes / n at the given z (1.96: 95%); {0, 1} for
// n = 0. Unlike the normal approximation it stays inside [0, 1] and is sound near 0 and 1.
Interval wilson_interval(int64_t successes, int64_t n, double z = 1.96);

// Two systems scored on the same questions.
struct PairedComparison {
    int64_t n = 0;
    int64_t only_a = 0;  // questions a answers and b does not
    int64_t only_b = 0;
    double difference = 0;   // accuracy(a) - accuracy(b)
    Interval difference_ci;  // 95%, from the paired differences (normal approximation)
    double p_value = 1;      // McNemar's exact two-sided test on the discordant pairs
};

// a and b must have the same length.
PairedComparison compare_paired(const std::vector<bool>& a, const std::vector<bool>& b);

// P(X <= k) + P(X >= n - k) for X ~ Binomial(n, 1/2), k <= n/2, capped at 1 (McNemar's exact test).
double two_sided_binomial_half(int64_t k, int64_t n);

}  // namespace lazyattn::bench
