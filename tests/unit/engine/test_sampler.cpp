#include "engine/sequence/sampler.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace lazyattn::engine
