// Presence / frequency penalties and logprobs: the penalty formula on hand-made logits, the
// log-softmax and its top alternatives, generated-token logprobs through the engine (greedy: the
// sampled token is the best alternative), and prompt logprobs (echo) against the engine's raw
// tail logits, on the synthetic model in every cache mode and on the real SmolLM2 model.
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include <gtest/gtest.h>

#include "engine/request/token_logprobs.h"
#include "engine/sequence/sampler.h"
#include "engine/sync_engine.h"
#include "scheduler_fixture.h"

namespace lazyattn::engine {
namespace {

using testing_support::config;
using testing_support::model;

// The test's own log-softmax (double throughout), independent of token_logprobs().
std::vector<double> reference_log_softmax(const float* logits, int32_t n) {
    double max_logit = logits[0];
    for (int32_t i = 1; i < n; ++i) max_logit = std::max(max_logit, double(logits[i]));
    double sum = 0;
    for (int32_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - max_logit);
    std::vector<double> out(n);
    for (int32_t i = 0; i < n; ++i) out[i] = double(logits[i]) - max_logit - std::log(sum);
    return out;
}

// --- Penalties -------------------------------------------------------------------------------

TEST(Penalties, PresenceAndFrequencyFollowTheFormulaOverGeneratedTokensOnly) {
    SamplingParams p;
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f;
    Sampler s(p);
    const std::vector<float> logits{1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
    // Prompt {0, 1, 2}; generated {2, 2, 3}.
    const std::vector<int32_t> history{0, 1, 2, 2, 2, 3};
    s.sample(logits.data(), 5, history, 3);
    const std::vector<float>& l = s.penalized_logits();
    EXPECT_FLOAT_EQ(l[0], 1.0f);  // in the prompt only: untouched
    EXPECT_FLOAT_EQ(l[1], 2.0f);
    EXPECT_FLOAT_EQ(l[2], 3.0f - 0.25f * 2 - 0.5f);  // generated twice (the prompt's one not counted)
    EXPECT_FLOAT_EQ(l[3], 4.0f - 0.25f * 1 - 0.5f);
    EXPECT_FLOAT_EQ(l[4], 5.0f);  // never seen
}

TEST(Penalties, ChangeTheGreedyChoice) {
    const std::vector<float> logits{3.0f, 2.9f};
    const std::vector<int32_t> generated_zero{0};
    SamplingParams p;
    EXPECT_EQ(Sampler(p).sample(logits.data(), 2, generated_zero, 0), 0);
    p.presence_penalty = 0.2f;  // 3.0 - 0.2 = 2.8 < 2.9
    EXPECT_EQ(Sampler(p).sample(logits.data(), 2, generated_zero, 0), 1);
    EXPECT_EQ(Sampler(p).sample(logits.data(), 2, generated_zero, 1), 0);  // the 0 is prompt: no penalty
    p = {};
    p.frequency_penalty = 0.06f;  // once: 2.94 > 2.9; twice: 2.88 < 2.9
    EXPECT_EQ(Sampler(p).sample(logits.data(), 2, generated_zero, 0), 0);
    const std::vector<int32_t> generated_twice{0, 0};
    EXPECT_EQ(Sampler(p).sample(logits.data(), 2, generated_twice, 0), 1);
    // Negative penalties encourage repeats: 2.5 + 0.5 * 2 = 3.5 > 3.0.
    const std::vector<float> low{2.5f, 3.0f};
    p = {};
    p.frequency_penalty = -0.5f;
    EXPECT_EQ(Sampler(p).sample(low.data(), 2, generated_twice, 0), 0);
}

TEST(Penalties, ApplyAfterTheRepetitionPenalty) {
    SamplingParams p;
    p.repetition_penalty = 2.0f;
    p.presence_penalty = 1.0f;
    Sampler s(p);
    const std::vector<float> logits{4.0f, 0.0f};
    const std::vector<int32_t> history{0};
    s.sample(logits.data(), 2, history, 0);
    EXPECT_FLOAT_EQ(s.penalized_logits()[0], 4.0f / 2 - 1.0f);  // not (4 - 1) / 2
}

TEST(Penalties, ValidateRanges) {
    auto ok = [](float presence, float frequency, int32_t logprobs) {
        SamplingParams p;
        p.presence_penalty = presence;
        p.frequency_penalty = frequency;
        p.logprobs = logprobs;
        return p.validate().ok();
    };
    EXPECT_TRUE(ok(0, 0, -1));
    EXPECT_TRUE(ok(-2, 2, 20));
    EXPECT_TRUE(ok(2, -2, 0));
    EXPECT_FALSE(ok(2.01f, 0, -1));
    EXPECT_FALSE(ok(0, -2.01f, -1));
    EXPECT_FALSE(ok(std::nanf(""), 0, -1));
    EXPECT_FALSE(ok(0, std::numeric_limits<float>::infinity(), -1));
    EXPECT_FALSE(ok(0, 0, 21));
    EXPECT_FALSE(ok(0, 0, -2));
}

// --- Log-softmax and top alternatives --------------------------------------------------------

TEST(TokenLogprobs, StableLogSoftmaxAndSortedTopWithTiesByLowerId) {
    const std::vector<float> logits{1.0f, 3.0f, 2.0f, 3.0f, 0.0f};
    const TokenLogprobs lp = token_logprobs(logits.data(), 5, 2, 3);
    const double log_z = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0) + 1.0);
    EXPECT_NEAR(lp.logprob, 2.0 - log_z, 1e-6);
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[0].first, 1);  // tie with 3: lower id first
    EXPECT_EQ(lp.top[1].first, 3);
    EXPECT_EQ(lp.top[2].first, 2);
    EXPECT_NEAR(lp.top[0].second, 3.0 - log_z, 1e-6);
    EXPECT_EQ(lp.top[0].second, lp.top[1].second);
    // Huge logits do not overflow.
    const std::vector<float> huge{1000.0f, 1000.0f, -1000.0f};
    EXPECT_NEAR(token_logprobs(huge.data(), 3, 0, 0).logprob, -std::log(2.0), 1e-6);
    EXPECT_TRUE(token_logprobs(huge.data(), 3, 0, 0).top.empty());
    EXPECT_EQ(top_ids(huge.data(), 3, 10).size(), 3u);  // k clamped to the vocabulary
}

TEST(TokenLogprobs, SamplerReportsThePenalizedDistributionBeforeTemperature) {
    const std::vector<float> logits{1.0f, 2.0f, 3.0f, 0.5f};
    const std::vector<int32_t> history{2};
    SamplingParams p;
    p.presence_penalty = 1.5f;  // token 2: 3.0 -> 1.5
    p.logprobs = 2;
    TokenLogprobs lp;
    const int32_t token = Sampler(p).sample(logits.data(), 4, history, 0, &lp);
    EXPECT_EQ(token, 1);
    const std::vector<float> penalized{1.0f, 2.0f, 1.5f, 0.5f};
    const auto want = reference_log_softmax(penalized.data(), 4);
    EXPECT_NEAR(lp.logprob, want[1], 1e-6);
    ASSERT_EQ(lp.top.size(), 2u);
    EXPECT_EQ(lp.top[0].first, 1);
    EXPECT_EQ(lp.top[1].first, 2);
    EXPECT_NEAR(lp.top[1].second, want[2], 1e-6);
    // A temperature changes the draw, not the reported distribution.
    p.temperature = 0.3f;
    p.top_k = 1;
    TokenLogprobs hot;
    EXPECT_EQ(Sampler(p).sample(logits.data(), 4, history, 0, &hot), 1);
    EXPECT_EQ(hot.logprob, lp.logprob);
    EXPECT_EQ(hot.top, lp.top);
    // Not asked: left alone.
    p.logprobs = -1;
    TokenLogprobs untouched;
    untouched.logprob = 7.0f;
    Sampler(p).sample(logits.data(), 4, history, 0, &untouched);
    EXPECT_EQ(untouched.logprob, 7.0f);
    EXPECT_TRUE(untouched.top.empty());
}

// --- Generated-token logprobs through the engine ---------------------------------------------

RagRequest small_request(uint64_t seed, int32_t num_segments, int32_t tail_len, int32_t max_tokens) {
    std::mt19937_64 rng(seed);
    RagRequest r;
    for (int32_t d = 0; d < num_segments; ++d) r.segments.push_back(testing_support::random_tokens(rng, 7 + 5 * d));
    r.tail = testing_support::random_tokens(rng, tail_len);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

TEST(EngineLogprobs, GreedyRunReportsTheSampledTokenAsTheBestAlternative) {
    SyncEngine e(*model().model, *model().tokenizer, config(CacheMode::kLazy, 16));
    RagRequest r = small_request(3, 2, 9, 8);
    const RagResult plain = e.run(r).value();
    EXPECT_TRUE(plain.token_logprobs.empty());
    EXPECT_TRUE(plain.top_logprobs.empty());
    EXPECT_TRUE(plain.prompt_token_logprobs.empty());

    r.sampling.logprobs = 5;
    std::vector<RequestEvent> events;
    auto handle = e.core().add(r, [&](const RequestEvent& ev) { events.push_back(ev); }).value();
    while (!handle->finished()) e.core().step();
    const RagResult res = handle->wait();
    EXPECT_EQ(res.token_ids, plain.token_ids);  // asking for logprobs changes nothing sampled
    ASSERT_EQ(res.token_logprobs.size(), res.token_ids.size());
    ASSERT_EQ(res.top_logprobs.size(), res.token_ids.size());
    size_t num_token_events = 0;
    for (size_t i = 0; i < res.token_ids.size(); ++i) {
        const auto& top = res.top_logprobs[i];
        ASSERT_EQ(top.size(), 5u);
        EXPECT_EQ(top[0].first, res.token_ids[i]);
        EXPECT_EQ(top[0].second, res.token_logprobs[i]);
        EXPECT_LE(res.token_logprobs[i], 0.0f);
        double mass = 0;
        for (size_t k = 0; k < top.size(); ++k) {
            EXPECT_LE(top[k].second, 0.0f);
            if (k > 0) {
                EXPECT_GE(top[k - 1].second, top[k].second);
            }
            mass += std::exp(double(top[k].second));
        }
        EXPECT_LE(mass, 1.0 + 1e-6);
    }
    for (const RequestEvent& ev : events) {
        if (ev.kind != RequestEvent::Kind::kToken || ev.token_id < 0) continue;
        ASSERT_LT(num_token_events, res.token_ids.size());
        EXPECT_EQ(ev.logprob, res.token_logprobs[num_token_events]);
        EXPECT_EQ(ev.top_logprobs, res.top_logprobs[num_token_events]);
        ++num_token_events;
    }
    EXPECT_EQ(num_token_events, res.token_ids.size());

    r.sampling.logprobs = 0;  // the sampled token's logprob only
    const RagResult zero = e.run(r).value();
    ASSERT_EQ(zero.token_logprobs.size(), zero.token_ids.size());
    for (size_t i = 0; i < zero.token_ids.size(); ++i) {
        EXPECT_TRUE(zero.top_logprobs[i].empty());
        EXPECT_EQ(zero.token_logprobs[i], res.token_logprobs[i]);
    }
}

TEST(EngineLogprobs, OutOfRangeLogprobsAreRefused) {
    SyncEngine e(*model().model, *model().tokenizer, config(CacheMode::kLazy, 16));
    RagRequest r = small_request(4, 0, 5, 2);
    r.sampling.logprobs = 21;
    EXPECT_FALSE(e.run(r).ok());
    r.sampling.logprobs = -1;
    r.prompt_logprobs = 21;
    EXPECT_FALSE(e.run(r).ok());
    r.prompt_logprobs = -2;
    EXPECT_FALSE(e.run(r).ok());
}

// --- Prompt logprobs -------------------------------------------------------------------------

// Checks prompt logprobs of `r` (run with prompt_logprobs = k) against raw tail logits: row
// `first_row + i - 1` of `logits` predicts r.tail[i].
void expect_prompt_logprobs_match(const RagRequest& r, const RagResult& res, const std::vector<float>& logits,
                                  int32_t first_row, int32_t vocab, int32_t k, double tol) {
    ASSERT_EQ(res.prompt_token_logprobs.size(), r.tail.size());
    ASSERT_EQ(res.prompt_top_logprobs.size(), r.tail.size());
    for (size_t i = 0; i < r.tail.size(); ++i) {
        const int64_t row = int64_t(first_row) + int64_t(i) - 1;
        if (row < 0) {
            EXPECT_TRUE(std::isnan(res.prompt_token_logprobs[i])) << i;
            EXPECT_TRUE(res.prompt_top_logprobs[i].empty());
            continue;
        }
        ASSERT_LE(size_t(row + 1) * vocab, logits.size());
        const auto want = reference_log_softmax(logits.data() + size_t(row) * vocab, vocab);
        EXPECT_NEAR(res.prompt_token_logprobs[i], want[r.tail[i]], tol) << "tail token " << i;
        const auto& top = res.prompt_top_logprobs[i];
        ASSERT_EQ(top.size(), size_t(k));
        for (int32_t j = 0; j < k; ++j) {
            EXPECT_NEAR(top[j].second, want[top[j].first], tol);
            if (j > 0) {
                EXPECT_GE(top[j - 1].second, top[j].second);
            }
        }
        if (k > 0) {
            EXPECT_NEAR(top[0].second, *std::max_element(want.begin(), want.end()), tol);
        }
    }
}

TEST(PromptLogprobs, MatchTheTailLogitsInEveryMode) {
    const int32_t vocab = model().model->config().vocab_size;
    for (CacheMode mode :
         {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn, CacheMode::kPrefix, CacheMode::kNone}) {
        for (int32_t num_segments : {0, 2}) {
            SCOPED_TRACE(std::string(cache_mode_name(mode)) + " segments " + std::to_string(num_segments));
            // A small batch budget: the prompt's rows arrive over several steps.
            SyncEngine e(*model().model, *model().tokenizer, config(mode, 16, 8));
            RagRequest r = small_request(11 + num_segments, num_segments, 13, 3);
            const std::vector<float> logits = e.tail_logits(r).value();
            r.prompt_logprobs = 4;
            const RagResult res = e.run(r).value();
            EXPECT_EQ(res.token_ids.size(), 3u);
            // In prefix and none the segments are the start of the causal prompt.
            const bool flattened = mode == CacheMode::kPrefix || mode == CacheMode::kNone;
            const int32_t first_row = flattened ? r.num_prompt_tokens() - int32_t(r.tail.size()) : 0;
            expect_prompt_logprobs_match(r, res, logits, first_row, vocab, 4, 1e-4);
            if (flattened && num_segments > 0) {
                EXPECT_FALSE(std::isnan(res.prompt_token_logprobs[0]));
            }
        }
    }
}

TEST(PromptLogprobs, CachedTailBlocksAreNotReused) {
    const int32_t vocab = model().model->config().vocab_size;
    SyncEngine e(*model().model, *model().tokenizer, config(CacheMode::kPrefix, 16));
    RagRequest r = small_request(21, 0, 40, 2);  // more than a block: the prompt is cached
    const std::vector<float> logits = e.tail_logits(r).value();
    ASSERT_TRUE(e.run(r).ok());  // caches the prompt's blocks
    r.prompt_logprobs = 1;
    const RagResult res = e.run(r).value();
    EXPECT_EQ(res.stats.reused_tokens, 0);
    expect_prompt_logprobs_match(r, res, logits, 0, vocab, 1, 1e-4);
    r.prompt_logprobs = -1;
    EXPECT_GT(e.run(r).value().stats.reused_tokens, 0);  // without them the cache serves it
}

TEST(PromptLogprobs, SurvivePreemption) {
    // A pool so small that running the requests together preempts. Whether a given workload
    // preempts depends on how the scheduler orders prefill, so grow it until one does.
    for (int32_t n : {4, 6, 8}) {
        for (int32_t gen : {12, 28}) {
            std::vector<RagRequest> reqs;
            for (int32_t i = 0; i < n; ++i) {
                reqs.push_back(small_request(31 + uint64_t(i), 0, 20 + i, gen));
                reqs.back().prompt_logprobs = 2;
            }
            std::vector<RagResult> alone;
            {
                SyncEngine e(*model().model, *model().tokenizer, config(CacheMode::kNone, 16));
                for (const auto& r : reqs) alone.push_back(e.run(r).value());
            }
            EngineConfig c = config(CacheMode::kNone, 16, 16);
            c.kv_num_blocks = 8;
            SyncEngine e(*model().model, *model().tokenizer, c);
            std::vector<std::shared_ptr<RequestHandle>> handles;
            for (const auto& r : reqs) handles.push_back(e.core().add(r).value());
            while (!e.core().idle()) e.core().step();
            if (e.scheduler().stats().preemptions == 0) continue;
            for (size_t i = 0; i < reqs.size(); ++i) {
                const RagResult res = handles[i]->wait();
                ASSERT_EQ(res.finish_reason, engine::FinishReason::kLength);
                ASSERT_EQ(res.prompt_token_logprobs.size(), alone[i].prompt_token_logprobs.size());
                EXPECT_TRUE(std::isnan(res.prompt_token_logprobs[0]));
                for (size_t t = 1; t < res.prompt_token_logprobs.size(); ++t) {
                    EXPECT_NEAR(res.prompt_token_logprobs[t], alone[i].prompt_token_logprobs[t], 1e-4);
                }
                EXPECT_EQ(res.token_ids, alone[i].token_ids);
            }
            return;
        }
    }
    FAIL() << "no workload preempted in an 8-block pool";
}

// The lm-evaluation-harness case on the real model: the whole prompt (context + continuation)
// is the tail (prefix / none, no documents); prompt logprobs equal a forward pass's
// log-softmax, and their sum over the continuation is the loglikelihood.
TEST(PromptLogprobs, RealModelMatchesForwardPassLogSoftmax) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no model at " LAZYATTN_MODEL_PATH;
    auto lm = load_model(LAZYATTN_MODEL_PATH, 2);
    ASSERT_TRUE(lm.ok()) << lm.status().to_string();
    const int32_t vocab = lm->model->config().vocab_size;
    const std::vector<int32_t> context = lm->tokenizer->encode("The capital of France is", false, false);
    const std::vector<int32_t> continuation = lm->tokenizer->encode(" Paris, a city on the Seine.", false, false);
    ASSERT_FALSE(context.empty());
    ASSERT_FALSE(continuation.empty());
    RagRequest r;
    r.tail = context;
    r.tail.insert(r.tail.end(), continuation.begin(), continuation.end());
    r.max_tokens = 0;
    for (CacheMode mode : {CacheMode::kNone, CacheMode::kPrefix}) {
        SCOPED_TRACE(cache_mode_name(mode));
        SyncEngine reference(*lm->model, *lm->tokenizer, config(mode, 16));
        const std::vector<float> logits = reference.tail_logits(r).value();
        ASSERT_EQ(logits.size(), r.tail.size() * size_t(vocab));
        SyncEngine e(*lm->model, *lm->tokenizer, config(mode, 16));
        RagRequest with = r;
        with.prompt_logprobs = 5;
        const RagResult res = e.run(with).value();
        expect_prompt_logprobs_match(with, res, logits, 0, vocab, 5, 1e-4);
        double want = 0, got = 0;
        for (size_t i = context.size(); i < r.tail.size(); ++i) {
            want += reference_log_softmax(logits.data() + (i - 1) * vocab, vocab)[r.tail[i]];
            got += res.prompt_token_logprobs[i];
        }
        EXPECT_NEAR(got, want, 1e-3);
        EXPECT_LT(got, 0.0);
    }
}

}  // namespace
}  // namespace lazyattn::engine
