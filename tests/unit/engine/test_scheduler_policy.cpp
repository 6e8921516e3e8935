// Scheduler policy without a model (policy_harness.h): admission, preemption, fairness, shared
// segment jobs, pins and quotas, cancellation, the queue bound, and the finish reasons that need
// no text (end of generation, length). Each test runs in milliseconds, with no tokenizer.
#include <algorithm>

#include "policy_harness.h"

namespace lazyattn::engine {
namespace {

using testing_support::kEos;
using testing_support::letters;
using testing_support::PolicyHarness;
using testing_support::request;
using testing_support::StepRecord;

EngineConfig config(int32_t num_blocks, int32_t block_size = 4, int32_t max_batch_tokens = 64) {
    EngineConfig c;
    c.cache_mode = CacheMode::kLazy;
    c.block_size = block_size;
    c.kv_num_blocks = num_blocks;
    c.max_batch_tokens = max_batch_tokens;
    return c;
}

// The fake runner's default answer (testing_support::alphabet) for n tokens.
std::vector<int32_t> expected_letters(int n) {
    std::vector<int32_t> s;
    for (int i = 0; i < n; ++i) s.push_back('a' + i % 26);
    return s;
}

TEST(SchedulerPolicy, AdmitsFirstComeFirstServedUpToMaxNumSeqs) {
    EngineConfig c = config(256);
    c.max_num_seqs = 2;
    PolicyHarness h(c);
    std::vector<std::shared_ptr<RequestHandle>> hs;
    for (int i = 0; i < 3; ++i) hs.push_back(h.submit(request({letters(8, i)}, 3, 4, "", i)));
    ASSERT_TRUE(h.step());
    EXPECT_GE(h.scheduler().find(hs[0]->id())->admit_step, 0);
    EXPECT_GE(h.scheduler().find(hs[1]->id())->admit_step, 0);
    EXPECT_LT(h.scheduler().find(hs[2]->id())->admit_step, 0) << "the third waits for a slot";
    EXPECT_EQ(h.scheduler().stats().num_running, 2);
    h.run_all();
    for (auto& x : hs) {
        const RagResult r = x->wait();
        EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
        EXPECT_EQ(r.token_ids, expected_letters(4));
    }
    h.expect_pool_whole();
}

TEST(SchedulerPolicy, PreemptsTheNewestWhenBlocksRunOutAndStillFinishesEveryRequest) {
    // Each request alone needs 2 document + 16 tail blocks at its peak; 24 blocks cannot hold
    // three at once, so decode growth preempts the newest, which recomputes later.
    for (int32_t blocks : {1024, 24}) {
        PolicyHarness h(config(blocks));
        std::vector<std::shared_ptr<RequestHandle>> hs;
        for (int i = 0; i < 3; ++i) hs.push_back(h.submit(request({letters(8, i)}, 4, 56, "", i)));
        h.run_all();
        for (size_t i = 0; i < hs.size(); ++i) {
            const RagResult r = hs[i]->wait();
            ASSERT_EQ(r.finish_reason, engine::FinishReason::kLength) << r.status.to_string();
            EXPECT_EQ(r.token_ids, expected_letters(56));
        }
        if (blocks == 24) {
            EXPECT_GT(h.scheduler().stats().preemptions, 0);
            // The first admitted is never the victim while newer ones run.
            EXPECT_EQ(hs[0]->stats().preemptions, 0);
        } else {
            EXPECT_EQ(h.scheduler().stats().preemptions, 0);
        }
        h.expect_pool_whole();
    }
}

TEST(SchedulerPolicy, ALongDocumentDoesNotHoldBackAShortPromptBehindIt) {
    PolicyHarness h(config(1024, 4, 64));
    auto long_h = h.submit(request({letters(2000, 1)}, 3, 2, "", 1));
    ASSERT_TRUE(h.step());
    auto short_h = h.submit(request({letters(12, 2)}, 3, 2, "", 2));
    int steps = 0;
    while (short_h->stats().num_generated == 0 && !short_h->finished() && h.step()) ++steps;
    // The short prompt gets half the budget every step: 15 tokens take one step, a few at most.
    EXPECT_LE(steps, 3);
    EXPECT_FALSE(long_h->finished()) << "the long document should still be computing";
    h.run_all();
    EXPECT_EQ(long_h->wait().finish_reason, engine::FinishReason::kLength);
    EXPECT_EQ(short_h->wait().finish_reason, engine::FinishReason::kLength);
    h.expect_pool_whole();
}

TEST(SchedulerPolicy, DecodeRowsComeFirstAndPrefillIsCappedWhileDecoding) {
    EngineConfig c = config(2048, 4, 256);
    c.max_prefill_while_decoding = 32;
    PolicyHarness h(c);
    auto first = h.submit(request({letters(8, 1)}, 3, 40, "", 1));
    while (first->stats().num_generated == 0 && h.step()) {
    }
    h.run_all(1);  // the first decode step
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(h.add(request({letters(300, 10 + i)}, 3, 2, "", 10 + i)).ok());
    h.run_all();
    int mixed = 0;
    for (const auto& s : h.steps) {
        if (s.decode_rows == 0) continue;
        EXPECT_LE(s.rows - s.decode_rows, 32) << "prefill rows beside decode rows must stay under the cap";
        mixed += s.rows > s.decode_rows;
    }
    EXPECT_GT(mixed, 0);
    h.expect_pool_whole();
}

TEST(SchedulerPolicy, ADocumentSharedByConcurrentRequestsIsComputedOnce) {
    PolicyHarness h(config(512));
    const auto doc = letters(40, 3);
    std::vector<std::shared_ptr<RequestHandle>> hs;
    for (int i = 0; i < 4; ++i) hs.push_back(h.submit(request({doc, letters(8, 20 + i)}, 3, 2, "", i)));
    h.run_all();
    const SchedulerStats st = h.scheduler().stats();
    EXPECT_EQ(st.segment_jobs, 5) << "one job for the shared document, one per private one";
    for (auto& x : hs) EXPECT_EQ(x->wait().finish_reason, engine::FinishReason::kLength);
    // A second wave finds every document cached.
    auto again = h.submit(request({letters(8, 21), doc}, 3, 2, "", 9));
    h.run_all();
    EXPECT_EQ(again->wait().stats.segments_hit, 2);
    h.expect_pool_whole();
}

TEST(SchedulerPolicy, PinsCountPerTenantRespectTheQuotaAndStayPrivate) {
    EngineConfig c = config(200);
    c.max_pinned_blocks_per_tenant = 12;
    PolicyHarness h(c);
    const auto a = letters(40, 4), b = letters(40, 5);  // 10 blocks each
    ASSERT_TRUE(h.add(request({a, b}, 3, 1, "t1")).ok());
    h.run_all();
    EXPECT_EQ(h.scheduler().documents().pin("t2", a).status().code(), StatusCode::kNotFound)
        << "another tenant's document must not be pinnable";
    ASSERT_TRUE(h.scheduler().documents().pin("t1", a).ok());
    ASSERT_TRUE(h.scheduler().documents().pin("t1", a).ok()) << "a second pin of the same document costs nothing";
    EXPECT_EQ(h.scheduler().documents().pins().num_pinned(), 10);
    EXPECT_EQ(h.scheduler().documents().pin("t1", b).status().code(), StatusCode::kResourceExhausted)
        << "20 blocks is over the tenant's quota of 12";
    const std::string id = h.scheduler().documents().id("t1", a);
    EXPECT_EQ(h.scheduler().documents().unpin("t2", id).code(), StatusCode::kNotFound);
    ASSERT_TRUE(h.scheduler().documents().unpin("t1", id).ok());
    EXPECT_EQ(h.scheduler().documents().pins().num_pinned(), 10) << "two pins need two unpins";
    ASSERT_TRUE(h.scheduler().documents().unpin("t1", id).ok());
    EXPECT_EQ(h.scheduler().documents().pins().num_pinned(), 0);
    h.expect_pool_whole();
}

TEST(SchedulerPolicy, PinsNeverTakeMoreThanTheirShareOfThePool) {
    EngineConfig c = config(40);
    c.max_pinned_fraction = 0.5;
    PolicyHarness h(c);
    const auto a = letters(48, 6), b = letters(48, 7);  // 12 blocks each
    ASSERT_TRUE(h.add(request({a}, 3, 1)).ok());
    ASSERT_TRUE(h.add(request({b}, 3, 1)).ok());
    h.run_all();
    ASSERT_TRUE(h.scheduler().documents().pin("", a).ok());
    EXPECT_EQ(h.scheduler().documents().pin("", b).status().code(), StatusCode::kResourceExhausted)
        << "24 pinned blocks would pass half of 40";
    // A request needing more than the unpinned blocks is refused when added, naming the pins.
    const Status st = h.add(request({letters(120, 8)}, 3, 8)).status();  // 30 + 3 > 40 - 12
    EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(st.message().find("pinned"), std::string::npos) << st.message();
    ASSERT_TRUE(h.scheduler().documents().unpin("", h.scheduler().documents().id("", a)).ok());
    h.expect_pool_whole();
}

TEST(SchedulerPolicy, CancellingRunningAndWaitingRequestsReturnsEveryBlock) {
    EngineConfig c = config(64);
    c.max_num_seqs = 2;
    PolicyHarness h(c);
    std::vector<std::shared_ptr<RequestHandle>> hs;
    for (int i = 0; i < 4; ++i) hs.push_back(h.submit(request({letters(20, 30 + i)}, 3, 100, "", i)));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(h.step());
    hs[0]->cancel();  // running
    hs[3]->cancel();  // waiting
    ASSERT_TRUE(h.step());
    EXPECT_EQ(hs[0]->wait().finish_reason, engine::FinishReason::kCancelled);
    EXPECT_EQ(hs[3]->wait().finish_reason, engine::FinishReason::kCancelled);
    EXPECT_EQ(h.scheduler().find(hs[0]->id()), nullptr);
    EXPECT_EQ(h.scheduler().stats().requests_cancelled, 2);
    hs[1]->cancel();
    hs[2]->cancel();
    h.run_all();
    EXPECT_TRUE(h.scheduler().idle());
    h.expect_pool_whole();
}

// Selection by the question: the prompt tail first runs as a probe against the documents (its
// mass measured), then the rows the mass chose are recomputed as private rows overriding the
// cached ones, then the tail runs again; where the backend cannot measure attention the request
// is refused when added, naming the remedy.
TEST(SchedulerPolicy, RecomputeChosenByTheQuestionProbesThenRecomputesTheHeaviestTokens) {
    EngineConfig c = config(64);
    RagRequest r = request({letters(20, 1), letters(7, 2)}, 5, 2);
    r.reuse.recompute_share = 0.25;
    r.reuse.recompute_select = RecomputeSelect::kQuery;
    {
        PolicyHarness blind(c);
        const Status st = blind.add(r).status();
        EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
        EXPECT_NE(st.message().find("@query"), std::string::npos) << st.to_string();
    }
    PolicyHarness h(c, 4096, true);
    auto handle = h.submit(r);
    h.run_all();
    EXPECT_TRUE(handle->finished());
    int probe_rows = 0;
    std::vector<int32_t> overridden;  // tokens overridden in the first step that reads any
    for (const StepRecord& s : h.steps) {
        probe_rows += s.probe_rows;
        if (!overridden.empty() || s.overrides.empty()) continue;
        for (const auto& span : s.spans) {
            for (int32_t i = 0; i < span.override_count; ++i) {
                overridden.push_back(s.overrides[size_t(span.override_begin + i)].token);
            }
        }
    }
    EXPECT_EQ(probe_rows, 5);  // the prompt tail once
    // ceil(25% of 20) = 5 and ceil(25% of 7) = 2: the last tokens of each, the heaviest.
    EXPECT_EQ(overridden, (std::vector<int32_t>{15, 16, 17, 18, 19, 5, 6}));
    EXPECT_EQ(handle->wait().stats.recomputed_tokens, 7);
    // A long prompt tail runs whole, but only its last rows are measured: the mass's cost is
    // bounded whatever the tail.
    h.expect_pool_whole();
    PolicyHarness roomy(config(256), 4096, true);
    RagRequest long_tail = r;
    long_tail.tail = letters(kProbeMeasuredRows + 150, 3);
    auto second = roomy.submit(long_tail);
    roomy.run_all();
    ASSERT_TRUE(second->finished());
    int measured = 0, rows = 0;
    for (const StepRecord& s : roomy.steps) measured += s.probe_rows, rows += s.rows;
    EXPECT_EQ(measured, kProbeMeasuredRows);
    EXPECT_GE(rows, 2 * int(long_tail.tail.size()) + 27 + 7);  // the probe and the tail run whole
    EXPECT_EQ(second->wait().stats.recomputed_tokens, 7);
    roomy.expect_pool_whole();
}

TEST(SchedulerPolicy, AFullQueueRefusesAtOnceAndQueuesNothing) {
    EngineConfig c = config(64);
    c.max_queue = 2;
    PolicyHarness h(c);
    ASSERT_TRUE(h.add(request({letters(8, 1)}, 3, 2)).ok());
    ASSERT_TRUE(h.add(request({letters(8, 2)}, 3, 2)).ok());
    const Status st = h.add(request({letters(8, 3)}, 3, 2)).status();
    EXPECT_EQ(st.code(), StatusCode::kUnavailable);
    EXPECT_EQ(h.scheduler().stats().num_waiting, 2);
    h.run_all();
    h.expect_pool_whole();
}

TEST(SchedulerPolicy, EndOfGenerationFinishesWithStopUnlessIgnored) {
    PolicyHarness h(config(128));
    h.script = [](const SequenceState& s) { return s.num_generated == 3 ? kEos : 'x' + s.num_generated; };
    auto eos = h.submit(request({letters(8, 1)}, 3, 20));
    RagRequest ignore = request({letters(8, 3)}, 3, 5);
    ignore.ignore_eos = true;
    auto ignored = h.submit(std::move(ignore));
    h.run_all();
    const RagResult a = eos->wait(), c = ignored->wait();
    EXPECT_EQ(a.finish_reason, engine::FinishReason::kStop);
    EXPECT_EQ(a.token_ids, (std::vector<int32_t>{'x', 'y', 'z', kEos}));
    EXPECT_EQ(c.finish_reason, engine::FinishReason::kLength);
    EXPECT_EQ(c.token_ids.size(), 5u);
    h.expect_pool_whole();
}

TEST(SchedulerPolicy, AContextFullRequestEndsWithLength) {
    PolicyHarness h(config(128), /*context_length=*/40);
    auto x = h.submit(request({letters(20, 1)}, 4, 100));
    h.run_all();
    const RagResult r = x->wait();
    EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
    // Positions 24..39 hold 16 generated tokens; the 17th is sampled from position 39's logits
    // and ends the request, as it has no position left to be computed at.
    EXPECT_EQ(int(r.token_ids.size()), 40 - 24 + 1);
    h.expect_pool_whole();
}

}  // namespace
}  // namespace lazyattn::engine
