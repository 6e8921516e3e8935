// The RAG runner on a tiny synthetic model: the warm-up is run but left out of every statistic,
// the compulsory misses it counts agree with the engine's own misses when nothing is evicted, and
// a KV budget too small for one request of a mode is refused with kResourceExhausted (block-attn
// needs room for its per-request copies where lazy does not).
#include <gtest/gtest.h>

#include "bench/rag_runner.h"
#include "engine/loading/loaded_model.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::bench {
namespace {

class RagRunnerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto lm =
            engine::load_model(testing::synthetic_model_path(synthetic::SyntheticModelOptions{}, "rag-runner"), 1);
        ASSERT_TRUE(lm.ok()) << lm.status().to_string();
        model_ = new engine::LoadedModel(std::move(lm).value());
    }
    static void TearDownTestSuite() {
        delete model_;
        model_ = nullptr;
    }

    // 8 documents of 32 tokens (2 blocks each), k = 3, 12 requests.
    static Workload workload(int32_t output_tokens = 2) {
        WorkloadConfig c;
        c.num_docs = 8;
        c.doc_tokens = 32;
        c.docs_per_request = 3;
        c.zipf_s = 1.0;
        c.tail_tokens = 8;
        c.output_tokens = output_tokens;
        c.num_requests = 12;
        c.passages_path = std::string(LAZYATTN_SOURCE_DIR) + "/data/2wiki_sample.jsonl";
        auto w = make_workload(c, *model_->tokenizer);
        EXPECT_TRUE(w.ok()) << w.status().to_string();
        return *w;
    }

    static Expected<RunResult> run(const Workload& w, engine::CacheMode mode, int32_t blocks, int32_t warmup,
                                   int32_t clients = 1) {
        RunConfig rc;
        rc.label = engine::cache_mode_name(mode);
        rc.engine.cache_mode = mode;
        rc.engine.kv_num_blocks = blocks;
        rc.clients = clients;
        rc.warmup_requests = warmup;
        return run_workload(w, *model_->model, *model_->tokenizer, rc);
    }

    static inline engine::LoadedModel* model_ = nullptr;
};

TEST_F(RagRunnerTest, WarmUpIsRunButNotMeasured) {
    const Workload w = workload();
    auto r = run(w, engine::CacheMode::kLazy, 256, 4);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->warmup_requests, 4);
    EXPECT_EQ(r->ttft_ms.size(), 8u);
    EXPECT_EQ(r->e2e_ms.size(), 8u);
    EXPECT_EQ(r->output_tokens, 8 * 2);
    EXPECT_EQ(r->segment_hits + r->segment_misses, 8 * 3);  // the measured requests' lookups only
    EXPECT_EQ(r->compulsory.lookups, 8 * 3);
    EXPECT_GT(r->measured_s, 0);
    EXPECT_LE(r->measured_s, r->wall_s);
    // A pool that holds every document and one client: nothing is evicted, so every miss is a
    // first touch and every first touch a miss.
    EXPECT_EQ(r->segment_misses, r->compulsory.compulsory);
    for (double t : r->ttft_ms) EXPECT_GT(t, 0);
}

TEST_F(RagRunnerTest, MissesMatchFirstTouchesWithoutWarmUp) {
    const Workload w = workload();
    auto r = run(w, engine::CacheMode::kLazy, 256, 0);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->ttft_ms.size(), 12u);
    EXPECT_EQ(r->compulsory.lookups, 12 * 3);
    EXPECT_EQ(r->segment_misses, r->compulsory.compulsory);
    EXPECT_LT(r->hit_ratio(), 1.0 - r->compulsory.fraction() + 1e-12);
}

TEST_F(RagRunnerTest, BudgetTooSmallForBlockAttnCopies) {
    const Workload w = workload();
    // One request: 3 documents x 2 blocks + a 1-block tail = 7 blocks in lazy; block-attn also
    // copies the documents (13 blocks). A 10-block pool serves lazy (evicting as it goes) only.
    auto lazy = run(w, engine::CacheMode::kLazy, 10, 2, 2);
    ASSERT_TRUE(lazy.ok()) << lazy.status().to_string();
    EXPECT_EQ(lazy->ttft_ms.size(), 10u);
    EXPECT_GT(lazy->segment_misses, lazy->compulsory.compulsory);  // capacity misses too
    auto block = run(w, engine::CacheMode::kBlockAttn, 10, 2, 2);
    ASSERT_FALSE(block.ok());
    EXPECT_EQ(block.status().code(), StatusCode::kResourceExhausted) << block.status().to_string();
}

TEST_F(RagRunnerTest, PreemptedRequestsCountTheirLookupsOnce) {
    // A pool with room for one request and a bit: requests that grow while decoding preempt each
    // other, and a re-admitted request finds the documents it computed itself. Its lookups and
    // cached tokens are still those of its first admission (k lookups, never more cached tokens
    // than its prompt), so hit ratios under a tight budget are not inflated.
    const Workload w = workload(40);
    auto r = run(w, engine::CacheMode::kLazy, 11, 0, 4);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_GT(r->preemptions, 0);
    EXPECT_EQ(r->segment_hits + r->segment_misses, 12 * 3);
    EXPECT_LE(r->reused_tokens, int64_t(12) * (3 * 32 + 8));
}

TEST_F(RagRunnerTest, WarmUpMustLeaveRequestsToMeasure) {
    const Workload w = workload();
    EXPECT_EQ(run(w, engine::CacheMode::kLazy, 256, 12).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(run(w, engine::CacheMode::kLazy, 256, -1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lazyattn::bench
