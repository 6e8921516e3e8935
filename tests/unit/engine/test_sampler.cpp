#include "engine/sequence/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace lazyattn::engine {
namespace {

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
    SamplingParams p;
    Sampler s(p);
    std::vector<float> logits{0.1f, 3.0f, -1.0f, 3.0f};
    EXPECT_EQ(s.sample(logits.data(), 4, {}, 0), 1);
}

TEST(Sampler, RepetitionPenaltyChangesTheGreedyChoice) {
    const std::vector<int32_t> kZero{0};  // one prompt token: the penalty reads the prompt too
    SamplingParams p;
    p.repetition_penalty = 2.0f;
    Sampler s(p);
    std::vector<float> logits{2.0f, 1.5f, -1.0f};
    EXPECT_EQ(s.sample(logits.data(), 3, kZero, 1), 1);  // 2.0 / 2 = 1.0 < 1.5
    std::vector<float> negative{-1.0f, -1.5f};
    EXPECT_EQ(Sampler(p).sample(negative.data(), 2, kZero, 1), 1);  // -1 * 2 = -2 < -1.5
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDiffers) {
    std::vector<float> logits(100);
    for (int i = 0; i < 100; ++i) logits[i] = float(i % 7) * 0.3f;
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = 42;
    Sampler a(p), b(p);
    std::vector<int32_t> ta, tb;
    for (int i = 0; i < 50; ++i) {
        ta.push_back(a.sample(logits.data(), 100, {}, 0));
        tb.push_back(b.sample(logits.data(), 100, {}, 0));
    }
    EXPECT_EQ(ta, tb);
    p.seed = 43;
    Sampler c(p);
    std::vector<int32_t> tc;
    for (int i = 0; i < 50; ++i) tc.push_back(c.sample(logits.data(), 100, {}, 0));
    EXPECT_NE(ta, tc);
}

TEST(Sampler, TopKTopPMinPRestrictTheCandidates) {
    std::vector<float> logits{5.0f, 4.0f, 3.0f, 0.0f, -5.0f};
    auto draw_set = [&](SamplingParams p) {
        std::map<int32_t, int> counts;
        Sampler s(p);
        for (int i = 0; i < 2000; ++i) counts[s.sample(logits.data(), 5, {}, 0)]++;
        return counts;
    };
    SamplingParams base;
    base.temperature = 1.0f;
    base.seed = 7;
    SamplingParams k = base;
    k.top_k = 2;
    auto ck = draw_set(k);
    EXPECT_EQ(ck.size(), 2u);
    EXPECT_TRUE(ck.count(0) && ck.count(1));
    // p(0) ~ 0.665, p(1) ~ 0.245: top_p 0.8 keeps exactly tokens 0 and 1.
    SamplingParams tp = base;
    tp.top_p = 0.8f;
    EXPECT_EQ(draw_set(tp).size(), 2u);
    // min_p 0.2: keeps tokens with p >= 0.2 * p(0): 0 and 1 (p(2)/p(0) = e^-2 ~ 0.135).
    SamplingParams mp = base;
    mp.min_p = 0.2f;
    EXPECT_EQ(draw_set(mp).size(), 2u);
    // Very low temperature is almost greedy; plain temperature 1 reaches token 2 too.
    EXPECT_GE(draw_set(base).size(), 3u);
}

// The selection rule shared with the device kernel: the first index whose running sum reaches
// u * total (exactly at a boundary the lower index: the sum "reaches" it there).
TEST(Sampler, PickByRunningSumIsTheFirstIndexReachingUTimesTheTotal) {
    const std::vector<double> w{1.0, 2.0, 3.0, 4.0};  // total 10, running sums 1 3 6 10
    EXPECT_EQ(pick_by_running_sum(w, 0.0), 0u);
    EXPECT_EQ(pick_by_running_sum(w, 0.1), 0u);
    EXPECT_EQ(pick_by_running_sum(w, 0.1001), 1u);
    EXPECT_EQ(pick_by_running_sum(w, 0.3), 1u);
    EXPECT_EQ(pick_by_running_sum(w, 0.45), 2u);
    EXPECT_EQ(pick_by_running_sum(w, 0.61), 3u);
    EXPECT_EQ(pick_by_running_sum(w, 0.999999), 3u);
    // A zero weight is never picked unless it is first and u is 0 (the kernel's rule too).
    const std::vector<double> z{1.0, 0.0, 1.0};
    EXPECT_EQ(pick_by_running_sum(z, 0.5), 0u);
    EXPECT_EQ(pick_by_running_sum(z, 0.5001), 2u);
    // Rounding leaving the sum short of the target picks the last index.
    EXPECT_EQ(pick_by_running_sum(w, 1.0 + 1e-12), 3u);
}

TEST(Sampler, NextUniformIsAnExactFloatInZeroOneAndSeeded) {
    SamplingParams p;
    p.seed = 11;
    Sampler a(p), b(p);
    for (int i = 0; i < 1000; ++i) {
        const float u = a.next_uniform();
        EXPECT_GE(u, 0.0f);
        EXPECT_LT(u, 1.0f);
        const double scaled = double(u) * double(1 << 24);  // a multiple of 2^-24
        EXPECT_EQ(scaled, std::floor(scaled));
        EXPECT_EQ(u, b.next_uniform());
    }
}

// Empirical frequencies of `draws` seeded draws against `want` (the renormalized softmax):
// within 5 standard errors of a binomial count, sqrt(p (1 - p) / draws), plus 1e-4 for the
// 2^-24 grid of the draws. The seed is fixed, so this is a deterministic check of the rule, not
// a flaky statistical one; 5 sigma leaves room for any seed.
void expect_frequencies(const std::vector<float>& logits, const SamplingParams& p, const std::vector<double>& want,
                        int draws) {
    Sampler s(p);
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < draws; ++i) ++counts[s.sample(logits.data(), int32_t(logits.size()), {}, 0)];
    for (size_t t = 0; t < logits.size(); ++t) {
        const double f = double(counts[t]) / draws;
        const double tol = 5.0 * std::sqrt(want[t] * (1.0 - want[t]) / draws) + 1e-4;
        EXPECT_NEAR(f, want[t], tol) << "token " << t;
        if (want[t] == 0.0) {
            EXPECT_EQ(counts[t], 0) << "token " << t << " was truncated away";
        }
    }
}

// softmax(logits / temperature) over the tokens in `keep`, 0 elsewhere.
std::vector<double> softmax_over(const std::vector<float>& logits, float temperature, const std::vector<int>& keep) {
    std::vector<double> p(logits.size(), 0.0);
    double sum = 0.0;
    for (int t : keep) sum += p[t] = std::exp(double(logits[t]) / temperature);
    for (double& x : p) x /= sum;
    return p;
}

TEST(Sampler, TemperatureDrawsFollowTheSoftmax) {
    const std::vector<float> logits{2.0f, 1.0f, 0.5f, 0.0f, -1.0f, 1.0f};
    for (float temperature : {0.5f, 1.0f, 1.7f}) {
        SamplingParams p;
        p.temperature = temperature;
        p.seed = 5;
        expect_frequencies(logits, p, softmax_over(logits, temperature, {0, 1, 2, 3, 4, 5}), 100000);
    }
}

TEST(Sampler, TopKAndTopPTruncateThenRenormalize) {
    const std::vector<float> logits{5.0f, 4.0f, 3.0f, 0.0f, -5.0f, 4.0f};
    SamplingParams k;
    k.temperature = 1.3f;
    k.top_k = 3;  // 0, then the tied 1 and 5 (ties by the lower id: both fit)
    k.seed = 3;
    expect_frequencies(logits, k, softmax_over(logits, 1.3f, {0, 1, 5}), 100000);
    k.top_k = 2;  // 0 and 1: the tie at 4.0 is broken by the lower id
    expect_frequencies(logits, k, softmax_over(logits, 1.3f, {0, 1}), 100000);
    // At temperature 1: p(0) ~ 0.533, p(1) = p(5) ~ 0.196, p(2) ~ 0.072. top_p 0.8 keeps the
    // shortest prefix reaching 0.8: 0, 1, 5 (0.924); temperature then reshapes only those.
    SamplingParams tp;
    tp.temperature = 0.6f;
    tp.top_p = 0.8f;
    tp.seed = 9;
    expect_frequencies(logits, tp, softmax_over(logits, 0.6f, {0, 1, 5}), 100000);
    // top-k first, then top-p over the top-k set's renormalized probabilities: of {0, 1}
    // (0.731, 0.269) top_p 0.7 keeps 0 alone.
    tp.top_k = 2;
    tp.top_p = 0.7f;
    expect_frequencies(logits, tp, softmax_over(logits, 0.6f, {0}), 2000);
}

TEST(SamplingParams, ValidateRejectsBadValues) {
    SamplingParams p;
    p.top_p = 0.0f;
    EXPECT_FALSE(p.validate().ok());
    p = {};
    p.temperature = -1.0f;
    EXPECT_FALSE(p.validate().ok());
    p = {};
    p.repetition_penalty = 0.0f;
    EXPECT_FALSE(p.validate().ok());
    EXPECT_TRUE(SamplingParams{}.validate().ok());
}

// post_sampling_probs: the distribution after the chain, computed here by hand. Logits
// {5, 4, 3, 0, -5}, top_k 3 keeps ids 0..2; at temperature 0.5 each kept token's probability is
// exp(l / 0.5) over the kept ones' sum.
TEST(Sampler, PostSamplingProbsAreTheChainsRenormalisedDistribution) {
    const std::vector<float> logits{5.0f, 4.0f, 3.0f, 0.0f, -5.0f};
    SamplingParams p;
    p.temperature = 0.5f;
    p.top_k = 3;
    p.seed = 11;
    p.logprobs = 5;
    p.post_sampling_probs = true;
    const double z = std::exp(10.0) + std::exp(8.0) + std::exp(6.0);
    const double expected[] = {std::exp(10.0) / z, std::exp(8.0) / z, std::exp(6.0) / z};
    Sampler s(p);
    for (int draw = 0; draw < 20; ++draw) {
        TokenLogprobs lp;
        const int32_t token = s.sample(logits.data(), 5, {}, 0, &lp);
        ASSERT_GE(token, 0);
        ASSERT_LE(token, 2);  // top-k never lets 3 or 4 through
        EXPECT_NEAR(std::exp(lp.logprob), expected[token], 1e-6);
        ASSERT_EQ(lp.top.size(), 3u);  // 5 asked, 3 kept: the dropped ones are not listed
        double sum = 0;
        for (size_t i = 0; i < lp.top.size(); ++i) {
            EXPECT_EQ(lp.top[i].first, int32_t(i));  // best first
            EXPECT_NEAR(std::exp(lp.top[i].second), expected[i], 1e-6);
            sum += std::exp(lp.top[i].second);
        }
        EXPECT_NEAR(sum, 1.0, 1e-6);
    }
    // Without post_sampling_probs the same request reports the raw distribution (all 5 tokens).
    p.post_sampling_probs = false;
    TokenLogprobs raw;
    Sampler(p).sample(logits.data(), 5, {}, 0, &raw);
    EXPECT_EQ(raw.top.size(), 5u);
    const double raw_z = std::exp(5.0) + std::exp(4.0) + std::exp(3.0) + std::exp(0.0) + std::exp(-5.0);
    EXPECT_NEAR(std::exp(raw.top[0].second), std::exp(5.0) / raw_z, 1e-6);
}

TEST(Sampler, PostSamplingProbsFollowTopPAndMinPAndGreedy) {
    const std::vector<float> logits{2.0f, 2.0f, 0.0f, -3.0f};
    SamplingParams p;
    p.temperature = 1.0f;
    p.logprobs = 4;
    p.post_sampling_probs = true;
    // top_p 0.4: the first of the two tied best tokens (0.467 of the mass) already reaches it.
    p.top_p = 0.4f;
    TokenLogprobs lp;
    EXPECT_EQ(Sampler(p).sample(logits.data(), 4, {}, 0, &lp), 0);
    ASSERT_EQ(lp.top.size(), 1u);
    EXPECT_FLOAT_EQ(lp.logprob, 0.0f);
    // min_p 0.1: e^0 / e^2 = 0.135 stays, e^-3 / e^2 does not; renormalised over ids 0..2.
    p.top_p = 1.0f;
    p.min_p = 0.1f;
    Sampler(p).sample(logits.data(), 4, {}, 0, &lp);
    const double z = 2 * std::exp(2.0) + 1.0;
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_NEAR(std::exp(lp.top[0].second), std::exp(2.0) / z, 1e-6);
    EXPECT_NEAR(std::exp(lp.top[2].second), 1.0 / z, 1e-6);
    // Greedy: the argmax alone, certain.
    p.temperature = 0.0f;
    EXPECT_EQ(Sampler(p).sample(logits.data(), 4, {}, 0, &lp), 0);
    ASSERT_EQ(lp.top.size(), 1u);
    EXPECT_EQ(lp.top[0].first, 0);
    EXPECT_FLOAT_EQ(lp.top[0].second, 0.0f);
}

}  // namespace
}  // namespace lazyattn::engine
