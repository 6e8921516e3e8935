// Scheduling details with exact expectations: prefill is shared fairly (a short prompt is not
// held behind a long document), a request that must wait evicts nothing, finished requests free
// their chains tail first (so eviction keeps a document's reusable head), per-request peak
// block counts, all tail logits on a cache hit, and a KV pool too large for the machine is an
// error Status, not a crash.
#include <algorithm>

#include "engine/serving_engine.h"
#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "scheduler_fixture.h"

namespace lazyattn::engine {
namespace {

using testing_support::config;
using testing_support::model;
using testing_support::random_tokens;

// Every test here runs on each backend this binary has (scheduler_fixture.h).
class FairPrefill : public testing_support::OnEachBackend {};
class Admission : public testing_support::OnEachBackend {};
class Release : public testing_support::OnEachBackend {};
class RequestStats : public testing_support::OnEachBackend {};
class TailLogits : public testing_support::OnEachBackend {};
class KvPool : public testing_support::OnEachBackend {};
INSTANTIATE_ON_EACH_BACKEND(FairPrefill);
INSTANTIATE_ON_EACH_BACKEND(Admission);
INSTANTIATE_ON_EACH_BACKEND(Release);
INSTANTIATE_ON_EACH_BACKEND(RequestStats);
INSTANTIATE_ON_EACH_BACKEND(TailLogits);
INSTANTIATE_ON_EACH_BACKEND(KvPool);

RagRequest request_of(std::vector<std::vector<int32_t>> segments, std::vector<int32_t> tail, int32_t max_tokens) {
    RagRequest r;
    r.segments = std::move(segments);
    r.tail = std::move(tail);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

TEST_P(FairPrefill, AShortPromptIsNotHeldBehindALongDocument) {
    std::mt19937_64 rng(testing::test_seed() + 800);
    const RagRequest long_req = request_of({random_tokens(rng, 1200)}, random_tokens(rng, 3), 4);
    const RagRequest short_req = request_of({}, random_tokens(rng, 5), 4);
    EngineCore s(*model().model, *model().tokenizer, config(CacheMode::kLazy, 8, 64));
    auto long_h = s.add(long_req);
    ASSERT_TRUE(long_h.ok());
    ASSERT_TRUE(s.step());  // the document's job has started
    auto short_h = s.add(short_req);
    ASSERT_TRUE(short_h.ok());
    // The job has 1136 tokens left (18 steps of a 64-token budget). Sharing the budget, the short
    // prompt is computed in the first step after its arrival and samples its first token there.
    int steps = 0;
    while (!(*short_h)->next_event(0).has_value()) {
        ASSERT_TRUE(s.step());
        ASSERT_LE(++steps, 1) << "the short request waited behind the document";
    }
    while (s.step()) {
    }
    EXPECT_EQ((*short_h)->wait().finish_reason, engine::FinishReason::kLength);
    // Chunking the document differently changes nothing it computes.
    SyncEngine alone(*model().model, *model().tokenizer, config(CacheMode::kLazy, 8, 64));
    testing_support::expect_same_greedy(CacheMode::kLazy, long_req, alone.run(long_req)->token_ids,
                                        (*long_h)->wait().token_ids, "the long request");
    testing_support::expect_same_greedy(CacheMode::kLazy, short_req, alone.run(short_req)->token_ids,
                                        (*short_h)->wait().token_ids, "the short request");
}

TEST_P(Admission, AWaitingRequestEvictsNothing) {
    std::mt19937_64 rng(testing::test_seed() + 810);
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 30;
    EngineCore s(*model().model, *model().tokenizer, c);
    const auto doc = random_tokens(rng, 20);  // two blocks, cached after the first request
    ASSERT_TRUE(s.add(request_of({doc}, random_tokens(rng, 3), 1)).ok());
    while (s.step()) {
    }
    const std::string id = s.scheduler().documents().id("", doc);
    ASSERT_TRUE(s.scheduler().documents().tokens("", id).has_value());
    // A holds 21 blocks, leaving 9 free (the document's two among them); W needs 10 to start
    // (9 for its segment, 1 for its tail), so it waits, and must not take the document's blocks.
    auto a = s.add(request_of({random_tokens(rng, 320)}, random_tokens(rng, 3), 20));
    auto w = s.add(request_of({random_tokens(rng, 144)}, random_tokens(rng, 3), 4));
    ASSERT_TRUE(a.ok() && w.ok());
    s.step();
    EXPECT_LT(s.scheduler().find((*w)->id())->admit_step, 0) << "W should be waiting";
    EXPECT_TRUE(s.scheduler().documents().tokens("", id).has_value()) << "a waiting request evicted a cached document";
    EXPECT_EQ(s.scheduler().kv().kv_cache().num_free(), 9);
    while (s.step()) {
    }
    EXPECT_EQ((*a)->wait().finish_reason, engine::FinishReason::kLength);
    EXPECT_EQ((*w)->wait().finish_reason, engine::FinishReason::kLength);
}

TEST_P(Release, AFinishedRequestFreesItsDocumentTailFirst) {
    std::mt19937_64 rng(testing::test_seed() + 820);
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 20;
    SyncEngine e(*model().model, *model().tokenizer, c);
    const auto doc = random_tokens(rng, 64);  // four blocks
    ASSERT_EQ(e.run(request_of({doc}, random_tokens(rng, 3), 1))->stats.segments_missed, 1);
    // 17 blocks evict exactly one block of the document (15 never used, the first request's
    // tail block, then the first block the document freed).
    ASSERT_EQ(e.run(request_of({random_tokens(rng, 256)}, random_tokens(rng, 3), 1))->finish_reason,
              engine::FinishReason::kLength);
    // Freed last block first, the document keeps its first three blocks.
    const RagResult again = *e.run(request_of({doc}, random_tokens(rng, 3), 1));
    EXPECT_EQ(again.stats.segments_missed, 1);
    EXPECT_EQ(again.stats.reused_tokens, 48);
    e.check_integrity();
}

TEST_P(RequestStats, PeakBlocksIsRecorded) {
    std::mt19937_64 rng(testing::test_seed() + 830);
    SyncEngine e(*model().model, *model().tokenizer, config(CacheMode::kLazy, 4));
    // Three blocks of document, one of tail (5 prompt tokens + 7 computed generated ones).
    const auto r = e.run(request_of({random_tokens(rng, 40)}, random_tokens(rng, 5), 8));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->stats.peak_blocks, 4);
}

TEST_P(TailLogits, EveryTailRowEvenWhenTheTailIsCached) {
    std::mt19937_64 rng(testing::test_seed() + 840);
    SyncEngine e(*model().model, *model().tokenizer, config(CacheMode::kLazy, 4));
    const RagRequest req = request_of({random_tokens(rng, 20)}, random_tokens(rng, 40), 4);
    ASSERT_TRUE(e.run(req).ok());  // caches the tail's two full blocks
    const auto first = e.tail_logits(req), second = e.tail_logits(req);
    ASSERT_TRUE(first.ok() && second.ok());
    const size_t vocab = size_t(model().model->config().vocab_size);
    EXPECT_EQ(first->size(), req.tail.size() * vocab);
    EXPECT_EQ(second->size(), req.tail.size() * vocab);
    EXPECT_EQ(*first, *second);
}

TEST_P(KvPool, APoolTooLargeForTheMachineIsAnErrorStatus) {
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 2000000000;
    auto e = SyncEngine::create(*model().model, *model().tokenizer, c);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(e.status().message().find("MiB"), std::string::npos) << e.status().message();
    EXPECT_EQ(ServingEngine::create(*model().model, *model().tokenizer, c).status().code(),
              StatusCode::kResourceExhausted);
    // Constructed directly, the engine refuses work with the same error.
    SyncEngine direct(*model().model, *model().tokenizer, c);
    EXPECT_EQ(direct.run(request_of({}, {5, 6, 7}, 2)).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace lazyattn::engine
