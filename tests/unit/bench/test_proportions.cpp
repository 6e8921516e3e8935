// The quality benchmark's statistics against values computed by hand (and textbook examples).
#include <gtest/gtest.h>

#include <cmath>

#include "bench/proportions.h"

namespace lazyattn::bench {
namespace {

TEST(Proportions, WilsonIntervalMatchesTheFormula) {
    // 81 of 263 (Wilson 1927 / Newcombe 1998 example): 0.2553 to 0.3662.
    const Interval a = wilson_interval(81, 263);
    EXPECT_NEAR(a.low, 0.2553, 5e-4);
    EXPECT_NEAR(a.high, 0.3662, 5e-4);
    // Never outside [0, 1], and not degenerate at 0 or n successes.
    const Interval zero = wilson_interval(0, 20), all = wilson_interval(20, 20);
    EXPECT_EQ(zero.low, 0.0);
    EXPECT_NEAR(zero.high, 0.1611, 5e-4);
    EXPECT_NEAR(all.low, 0.8389, 5e-4);
    EXPECT_EQ(all.high, 1.0);
    const Interval none = wilson_interval(0, 0);
    EXPECT_EQ(none.low, 0.0);
    EXPECT_EQ(none.high, 1.0);
}

TEST(Proportions, McNemarExactTest) {
    // Binomial(10, 1/2): P(X <= 1) = 11/1024, two-sided 22/1024.
    EXPECT_NEAR(two_sided_binomial_half(1, 10), 22.0 / 1024, 1e-12);
    EXPECT_NEAR(two_sided_binomial_half(9, 10), 22.0 / 1024, 1e-12);  // symmetric
    EXPECT_EQ(two_sided_binomial_half(5, 10), 1.0);                   // capped
    EXPECT_EQ(two_sided_binomial_half(0, 0), 1.0);
    // Large n stays finite (logs): 2000 discordant pairs split 900 / 1100.
    const double p = two_sided_binomial_half(900, 2000);
    EXPECT_GT(p, 0.0);
    EXPECT_LT(p, 1e-5);
}

TEST(Proportions, PairedComparisonCountsDiscordantPairs) {
    // a right on 0..59, b right on 20..69 of 100 questions: a only 20, b only 10.
    std::vector<bool> a(100), b(100);
    for (int i = 0; i < 100; ++i) {
        a[i] = i < 60;
        b[i] = i >= 20 && i < 70;
    }
    const PairedComparison c = compare_paired(a, b);
    EXPECT_EQ(c.n, 100);
    EXPECT_EQ(c.only_a, 20);
    EXPECT_EQ(c.only_b, 10);
    EXPECT_NEAR(c.difference, 0.10, 1e-12);
    // Differences: 20 of +1, 10 of -1: variance 0.30 - 0.01 = 0.29, half width 1.96 sqrt(0.0029).
    EXPECT_NEAR(c.difference_ci.high - c.difference, 1.96 * std::sqrt(0.0029), 1e-9);
    EXPECT_NEAR(c.p_value, two_sided_binomial_half(10, 30), 1e-12);
    EXPECT_GT(c.p_value, 0.05);  // 20 vs 10 discordant is not significant at 5%
    const PairedComparison same = compare_paired(a, a);
    EXPECT_EQ(same.difference, 0.0);
    EXPECT_EQ(same.p_value, 1.0);
}

}  // namespace
}  // namespace lazyattn::bench
