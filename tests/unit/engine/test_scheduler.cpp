// The serving engine: continuous batching under memory pressure (preemption), many concurrent
// requests over shared documents, shared segment jobs, cancellation at random points, fairness
// under a steady stream, and the refusal of requests that can never fit. Every step runs the
// integrity check (pool, index, and every reference held by requests and jobs).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "engine/loading/loaded_model.h"
#include "engine/serving_engine.h"
#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "scheduler_fixture.h"

namespace lazyattn::engine {
namespace {

using testing_support::config;
using testing_support::model;

// Every test here runs on each backend this binary has (scheduler_fixture.h).
class SchedulerTest : public testing_support::OnEachBackend {};
class ServingEngineHealth : public testing_support::OnEachBackend {};
class PinnedDocuments : public testing_support::OnEachBackend {};
INSTANTIATE_ON_EACH_BACKEND(SchedulerTest);
INSTANTIATE_ON_EACH_BACKEND(ServingEngineHealth);
INSTANTIATE_ON_EACH_BACKEND(PinnedDocuments);

// A pool of documents and requests drawing k of them in random order.
struct Workload {
    std::vector<std::vector<int32_t>> docs;
    std::vector<RagRequest> requests;
};

Workload make_workload(uint64_t seed, int num_docs, int num_requests, int k, int max_tokens = 6) {
    std::mt19937_64 rng(seed);
    const int32_t vocab = model().model->config().vocab_size;
    auto tokens = [&](int32_t n) {
        std::vector<int32_t> t(n);
        for (auto& x : t) x = int32_t(3 + rng() % (vocab - 3));
        return t;
    };
    Workload w;
    for (int i = 0; i < num_docs; ++i) w.docs.push_back(tokens(5 + int32_t(rng() % 40)));
    for (int r = 0; r < num_requests; ++r) {
        RagRequest req;
        for (int j = 0; j < k; ++j) req.segments.push_back(w.docs[rng() % num_docs]);
        req.tail = tokens(3 + int32_t(rng() % 12));
        req.max_tokens = max_tokens;
        req.ignore_eos = true;
        w.requests.push_back(std::move(req));
    }
    return w;
}

// Each request alone, one after another, on a large pool.
std::vector<std::vector<int32_t>> one_by_one(CacheMode mode, const std::vector<RagRequest>& reqs) {
    SyncEngine e(*model().model, *model().tokenizer, config(mode, 32));
    std::vector<std::vector<int32_t>> out;
    for (const auto& r : reqs) out.push_back(e.run(r)->token_ids);
    return out;
}

void expect_pool_whole(const Scheduler& s) {
    s.check_integrity();
    EXPECT_EQ(s.kv().kv_cache().num_free(), s.kv().kv_cache().pool().num_blocks());
}

TEST_P(SchedulerTest, OutputsUnderMemoryPressureEqualOutputsWithALargePool) {
    for (CacheMode mode :
         {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn, CacheMode::kPrefix, CacheMode::kNone}) {
        // Random workloads do not always overflow the pool (prefix mode shares whole prompts), so
        // try a few until one preempts; every workload tried must give the one-by-one outputs.
        int64_t preemptions = 0;
        for (int attempt = 0; attempt < 6 && preemptions == 0; ++attempt) {
            const auto w = make_workload(testing::test_seed() + int(mode) + 1000 * attempt, 6, 10, 3, 24);
            const auto want = one_by_one(mode, w.requests);
            // A pool of 26 blocks: any one request fits, ten at once do not.
            EngineConfig c = config(mode, 1);
            c.kv_num_blocks = 26;
            EngineCore s(*model().model, *model().tokenizer, c);
            std::vector<std::shared_ptr<RequestHandle>> handles;
            for (const auto& r : w.requests) handles.push_back(*s.add(r));
            while (s.step()) {
            }
            for (size_t i = 0; i < handles.size(); ++i) {
                const RagResult r = handles[i]->wait();
                EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
                const std::string what = std::string(cache_mode_name(mode)) + " request " + std::to_string(i) +
                                         " attempt " + std::to_string(attempt);
                testing_support::expect_same_greedy(mode, w.requests[i], want[i], r.token_ids, what);
            }
            preemptions = s.scheduler().stats().preemptions;
            std::printf("[memory pressure] %-10s pool %d blocks: %lld preemptions, %lld steps\n", cache_mode_name(mode),
                        s.scheduler().kv().kv_cache().pool().num_blocks(), (long long)preemptions,
                        (long long)s.scheduler().stats().steps);
            expect_pool_whole(s.scheduler());
        }
        EXPECT_GT(preemptions, 0) << cache_mode_name(mode) << ": no workload overflowed the pool";
    }
}

TEST_P(SchedulerTest, SixtyFourConcurrentRequestsOverTenSharedDocuments) {
    const auto w = make_workload(testing::test_seed() + 100, 10, 64, 4);
    const auto want = one_by_one(CacheMode::kLazy, w.requests);
    ServingEngine engine(*model().model, *model().tokenizer, config(CacheMode::kLazy, 8));
    std::vector<std::shared_ptr<RequestHandle>> handles(w.requests.size());
    std::vector<std::thread> clients;
    for (int t = 0; t < 8; ++t) {  // eight client threads submit concurrently
        clients.emplace_back([&, t] {
            for (size_t i = t; i < w.requests.size(); i += 8) handles[i] = *engine.submit(w.requests[i]);
        });
    }
    for (auto& c : clients) c.join();
    for (size_t i = 0; i < handles.size(); ++i) {
        testing_support::expect_same_greedy(CacheMode::kLazy, w.requests[i], want[i], handles[i]->wait().token_ids,
                                            "request " + std::to_string(i));
    }
    engine.shutdown(false);
    const SchedulerStats s = engine.stats();
    EXPECT_EQ(s.requests_finished, 64);
    EXPECT_EQ(s.blocks_used, 0);
    EXPECT_EQ(s.blocks_free, s.blocks_total);
    EXPECT_LE(s.segment_jobs, 10) << "each document computed at most once";
    EXPECT_GT(s.batch_rows.rbegin()->first, 1) << "requests were batched together";
}

TEST_P(SchedulerTest, ASharedMissingSegmentIsComputedOnce) {
    const auto w = make_workload(testing::test_seed() + 200, 1, 5, 1);
    EngineCore s(*model().model, *model().tokenizer,
                 config(CacheMode::kLazy, 8, 8));  // 8-row steps: the job spans steps
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& r : w.requests) handles.push_back(*s.add(r));
    while (s.step()) {
    }
    EXPECT_EQ(s.scheduler().stats().segment_jobs, 1);
    EXPECT_EQ(s.scheduler().stats().segment_misses, 1);
    EXPECT_EQ(s.scheduler().stats().segment_hits, 4);
    for (auto& h : handles) EXPECT_EQ(h->wait().finish_reason, engine::FinishReason::kLength);
    expect_pool_whole(s.scheduler());
}

TEST_P(SchedulerTest, CancellingAtRandomPointsLeavesThePoolWhole) {
    std::mt19937_64 rng(testing::test_seed() + 300);
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kBlockAttn, CacheMode::kPrefix}) {
        const auto w = make_workload(rng(), 8, 24, 3, 20);
        EngineCore s(*model().model, *model().tokenizer, config(mode, 2, 32));
        std::vector<std::shared_ptr<RequestHandle>> handles;
        for (const auto& r : w.requests) handles.push_back(*s.add(r));
        int cancelled = 0;
        while (s.step()) {
            if (rng() % 3 == 0) {
                auto& h = handles[rng() % handles.size()];
                if (!h->finished()) {
                    h->cancel();
                    ++cancelled;
                }
            }
        }
        for (auto& h : handles) {
            const auto reason = h->wait().finish_reason;
            EXPECT_TRUE(reason == FinishReason::kLength || reason == FinishReason::kCancelled)
                << finish_reason_name(reason);
        }
        EXPECT_GT(cancelled, 0);
        EXPECT_EQ(s.scheduler().stats().requests_cancelled + s.scheduler().stats().requests_finished, 24);
        expect_pool_whole(s.scheduler());
    }
}

TEST_P(SchedulerTest, NoRequestWaitsUnboundedlyUnderASteadyStream) {
    const auto w = make_workload(testing::test_seed() + 400, 12, 60, 3, 8);
    EngineConfig c = config(CacheMode::kLazy, 1, 48);
    c.kv_num_blocks = 48;
    c.max_num_seqs = 6;
    EngineCore s(*model().model, *model().tokenizer, c);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    size_t next = 0;
    int64_t worst_wait = 0;
    std::map<uint64_t, int64_t> submitted_at;
    while (next < w.requests.size() || !s.idle()) {
        for (int i = 0; i < 2 && next < w.requests.size(); ++i) {  // two new requests per step
            handles.push_back(*s.add(w.requests[next++]));
            submitted_at[handles.back()->id()] = s.scheduler().num_steps();
        }
        s.step();
        for (const auto& [id, at] : submitted_at) {
            const SequenceState* st = s.scheduler().find(id);
            if (st != nullptr && st->admit_step < 0) worst_wait = std::max(worst_wait, s.scheduler().num_steps() - at);
        }
    }
    std::printf("[fairness] longest wait for admission: %lld steps\n", (long long)worst_wait);
    // FIFO admission and decode-first batching: a request waits at most for the ones ahead of it
    // (60 requests, each done in ~9 steps) and never starves.
    EXPECT_LE(worst_wait, 200);
    for (auto& h : handles) EXPECT_EQ(h->wait().finish_reason, engine::FinishReason::kLength);
    expect_pool_whole(s.scheduler());
}

TEST_P(SchedulerTest, ARequestThatCannotFitIsRefusedWithTheReason) {
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 32;
    EngineCore s(*model().model, *model().tokenizer, c);
    RagRequest r;
    r.segments.push_back(std::vector<int32_t>(1000, 7));
    r.tail = {5, 6, 7};
    auto h = s.add(r);
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(h.status().message().find("whole pool has 32, of which 0 are pinned"), std::string::npos);
    EXPECT_TRUE(s.idle());
    ServingEngine engine(*model().model, *model().tokenizer, c);
    EXPECT_EQ(engine.submit(r).status().code(), StatusCode::kResourceExhausted);
    RagRequest empty;
    EXPECT_EQ(engine.submit(empty).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(ServingEngineHealth, ReportsWorkAndProgress) {
    ServingEngine engine(*model().model, *model().tokenizer, config(CacheMode::kLazy, 2));
    EngineHealth h = engine.health();
    EXPECT_FALSE(h.has_work);
    EXPECT_EQ(h.ms_since_progress, 0);
    // The token callback runs on the inference thread: holding it holds the engine mid-step.
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> tokens{0};
    RagRequest r;
    r.tail = {5, 6, 7};
    r.max_tokens = 3;
    r.ignore_eos = true;
    auto handle = engine.submit(r, [&](const RequestEvent& e) {
        if (e.kind == RequestEvent::Kind::kToken && tokens++ == 0) released.wait();
    });
    ASSERT_TRUE(handle.ok());
    while (tokens.load() == 0) std::this_thread::yield();
    // Held mid-step, the engine makes no progress: the clock runs from the last progress.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    h = engine.health();
    EXPECT_TRUE(h.has_work);
    EXPECT_GE(h.ms_since_progress, 25);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_GT(engine.health().ms_since_progress, h.ms_since_progress) << "the clock must keep running while stuck";
    release.set_value();
    EXPECT_EQ((*handle)->wait().finish_reason, engine::FinishReason::kLength);
    engine.shutdown(false);  // joins the thread: its last snapshot is taken
    h = engine.health();
    EXPECT_FALSE(h.has_work);
    EXPECT_EQ(h.num_waiting, 0);
    EXPECT_EQ(h.num_running, 0);
}

}  // namespace
}  // namespace lazyattn::engine

namespace lazyattn::engine {
namespace {

using testing_support::config;
using testing_support::model;

TEST_P(PinnedDocuments, SurviveEvictionAndUnpinReleasesThem) {
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 40;
    ServingEngine engine(*model().model, *model().tokenizer, c);
    const auto w = make_workload(testing::test_seed() + 500, 30, 30, 3);
    const auto doc = w.docs[0];
    auto pinned = engine.pin_document("", doc);
    ASSERT_TRUE(pinned.ok()) << pinned.status().to_string();
    EXPECT_TRUE(pinned->pinned);
    EXPECT_EQ(pinned->num_tokens, int32_t(doc.size()));
    // Many other documents pass through a small pool: unpinned ones get evicted, the pinned stays.
    for (const auto& r : w.requests) {
        RagRequest other = r;
        other.segments.erase(std::remove(other.segments.begin(), other.segments.end(), doc), other.segments.end());
        ASSERT_TRUE(engine.submit(other).ok());
    }
    for (int i = 0; i < 200 && engine.stats().requests_finished < 30; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto docs = engine.list_documents("");
    auto it = std::find_if(docs.begin(), docs.end(), [&](const DocumentInfo& d) { return d.id == pinned->id; });
    ASSERT_NE(it, docs.end());
    EXPECT_TRUE(it->pinned);
    EXPECT_LT(docs.size(), 31u) << "some unpinned documents should have been evicted";
    ASSERT_TRUE(engine.document_tokens("", pinned->id).has_value());
    EXPECT_EQ(*engine.document_tokens("", pinned->id), doc);
    EXPECT_TRUE(engine.unpin_document("", pinned->id).ok());
    EXPECT_EQ(engine.unpin_document("", pinned->id).code(), StatusCode::kNotFound);
    EXPECT_FALSE(engine.document_tokens("", "00000000000000000000000000000000").has_value());
    engine.shutdown(false);
    EXPECT_EQ(engine.stats().blocks_used, 0);
}

}  // namespace
}  // namespace lazyattn::engine
