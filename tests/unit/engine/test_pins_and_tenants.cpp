// Pinned documents and tenants: pins are capped (a share of the pool, a per-tenant quota) and
// refused beyond it, never hung on; requests are checked against the pool's unpinned blocks at
// submission and again whenever pins change while they wait; a tenant's documents are invisible
// to others (no cache hits, no listing, no lookup or unpin by id); chat preambles are cached but
// never listed as documents.
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

RagRequest request_of(std::vector<std::vector<int32_t>> segments, std::vector<int32_t> tail, int32_t max_tokens,
                      std::string tenant = "") {
    RagRequest r;
    r.tenant = std::move(tenant);
    r.segments = std::move(segments);
    r.tail = std::move(tail);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

void run_all(EngineCore& s) {
    while (s.step()) {
    }
}

TEST(Pins, PinsStopAtTheCapAndRequestsAreCheckedAgainstTheUnpinnedPool) {
    std::mt19937_64 rng(testing::test_seed() + 600);
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 40;  // block size 16; documents may pin 20 blocks
    ServingEngine engine(*model().model, *model().tokenizer, c);
    // Ten two-block documents fill the cap exactly; the eleventh is refused at once.
    for (int i = 0; i < 10; ++i) {
        auto pinned = engine.pin_document("", random_tokens(rng, 30));
        ASSERT_TRUE(pinned.ok()) << i << ": " << pinned.status().to_string();
    }
    auto over = engine.pin_document("", random_tokens(rng, 30));
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(over.status().message().find("20 of the 20"), std::string::npos) << over.status().message();
    EXPECT_EQ(engine.stats().blocks_pinned, 20);

    // 18 blocks (16 of segment, 2 of tail) fit the 20 unpinned blocks and run.
    auto fits = engine.submit(request_of({random_tokens(rng, 256)}, random_tokens(rng, 4), 20));
    ASSERT_TRUE(fits.ok()) << fits.status().to_string();
    EXPECT_EQ((*fits)->wait().finish_reason, engine::FinishReason::kLength);
    // 22 blocks would fit the whole pool but not its unpinned part: refused, not queued.
    auto too_big = engine.submit(request_of({random_tokens(rng, 320)}, random_tokens(rng, 4), 20));
    ASSERT_FALSE(too_big.ok());
    EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(too_big.status().message().find("needs up to 22 KV blocks but the whole pool has 40, of which 20 are "
                                              "pinned by documents, leaving 20"),
              std::string::npos)
        << too_big.status().message();
    engine.shutdown(false);
}

TEST(Pins, ARequestUsingPinnedDocumentsCountsThemAsPresent) {
    std::mt19937_64 rng(testing::test_seed() + 610);
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 40;
    ServingEngine engine(*model().model, *model().tokenizer, c);
    std::vector<std::vector<int32_t>> docs;
    for (int i = 0; i < 10; ++i) {
        docs.push_back(random_tokens(rng, 32));
        ASSERT_TRUE(engine.pin_document("", docs.back()).ok());
    }
    // 20 pinned blocks of its own documents plus 3 of tail: more than the 20 unpinned blocks
    // were its documents not in the pool already.
    auto h = engine.submit(request_of(docs, random_tokens(rng, 4), 40));
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    const RagResult r = h->get()->wait();
    EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
    EXPECT_EQ(r.stats.segments_hit, 10);
    // Another tenant's request with the same documents has them as misses: it needs them all.
    auto other = engine.submit(request_of(docs, random_tokens(rng, 4), 40, "other"));
    EXPECT_EQ(other.status().code(), StatusCode::kResourceExhausted);
    engine.shutdown(false);
}

TEST(Pins, PerTenantQuota) {
    std::mt19937_64 rng(testing::test_seed() + 620);
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 40;
    c.max_pinned_blocks_per_tenant = 4;
    ServingEngine engine(*model().model, *model().tokenizer, c);
    ASSERT_TRUE(engine.pin_document("a", random_tokens(rng, 32)).ok());
    ASSERT_TRUE(engine.pin_document("a", random_tokens(rng, 32)).ok());
    auto third = engine.pin_document("a", random_tokens(rng, 32));
    EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(third.status().message().find("quota of 4"), std::string::npos) << third.status().message();
    EXPECT_TRUE(engine.pin_document("b", random_tokens(rng, 32)).ok()) << "quotas are per tenant";
    engine.shutdown(false);
}

TEST(Pins, AWaitingRequestWhoseRoomWentToPinsFailsInsteadOfHanging) {
    std::mt19937_64 rng(testing::test_seed() + 630);
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 60;  // documents may pin 30 blocks
    EngineCore s(*model().model, *model().tokenizer, c);
    // Ten two-block documents, computed and cached (not pinned yet).
    std::vector<std::vector<int32_t>> docs;
    for (int i = 0; i < 10; ++i) docs.push_back(random_tokens(rng, 32));
    auto warm = s.add(request_of(docs, random_tokens(rng, 3), 1));
    ASSERT_TRUE(warm.ok());
    run_all(s);
    // A runs holding 26 blocks; B (42 blocks at most, 39 to start) must wait for them.
    auto a = s.add(request_of({random_tokens(rng, 400)}, random_tokens(rng, 3), 8));
    auto b = s.add(request_of({random_tokens(rng, 600)}, random_tokens(rng, 3), 60));
    ASSERT_TRUE(a.ok() && b.ok());
    s.step();
    ASSERT_NE(s.scheduler().find((*a)->id()), nullptr);
    EXPECT_GE(s.scheduler().find((*a)->id())->admit_step, 0);
    ASSERT_NE(s.scheduler().find((*b)->id()), nullptr);
    EXPECT_LT(s.scheduler().find((*b)->id())->admit_step, 0) << "B should be waiting";
    // Pinning the documents leaves 40 unpinned blocks: B can never run now.
    for (const auto& d : docs) ASSERT_TRUE(s.scheduler().documents().pin("", d).ok());
    EXPECT_EQ(s.scheduler().documents().pins().num_pinned(), 20);
    s.step();
    ASSERT_TRUE((*b)->finished());
    const RagResult rb = (*b)->wait();
    EXPECT_EQ(rb.finish_reason, engine::FinishReason::kError);
    EXPECT_EQ(rb.status.code(), StatusCode::kResourceExhausted);
    run_all(s);
    EXPECT_EQ((*a)->wait().finish_reason, engine::FinishReason::kLength);
    EXPECT_TRUE(s.idle());
    for (const auto& d : docs)
        EXPECT_TRUE(s.scheduler().documents().unpin("", s.scheduler().documents().id("", d)).ok());
    EXPECT_EQ(s.scheduler().kv().kv_cache().num_free(), s.scheduler().kv().kv_cache().pool().num_blocks());
}

TEST(Tenants, DocumentsAreVisibleAndReusableOnlyWithinTheirTenant) {
    std::mt19937_64 rng(testing::test_seed() + 700);
    EngineConfig c = config(CacheMode::kLazy, 4);
    ServingEngine engine(*model().model, *model().tokenizer, c);
    const auto system = random_tokens(rng, 20), doc = random_tokens(rng, 40);
    auto run = [&](const std::string& tenant) {
        RagRequest r = request_of({system, doc}, random_tokens(rng, 4), 2, tenant);
        r.first_segment_is_preamble = true;
        return engine.submit(r).value()->wait();
    };
    EXPECT_EQ(run("a").stats.segments_missed, 2);
    const RagResult again = run("a");
    EXPECT_EQ(again.stats.segments_missed, 0) << "same tenant: hits";
    EXPECT_EQ(again.stats.segments_hit, 2);
    EXPECT_EQ(run("b").stats.segments_missed, 2) << "another tenant never hits a's blocks";

    // Listing: only the document, never the system preamble, and only to its tenant.
    const auto listed = engine.list_documents("a");
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].num_tokens, int32_t(doc.size()));
    const std::string id = listed[0].id;
    ASSERT_EQ(engine.list_documents("b").size(), 1u);
    EXPECT_NE(engine.list_documents("b")[0].id, id) << "ids are per tenant";
    EXPECT_TRUE(engine.list_documents("c").empty());
    EXPECT_EQ(engine.document_tokens("a", id), doc);
    EXPECT_FALSE(engine.document_tokens("c", id).has_value());

    // Pins are counted per tenant; another tenant can neither see nor unpin them.
    ASSERT_TRUE(engine.pin_document("a", doc).ok());
    auto twice = engine.pin_document("a", doc);
    ASSERT_TRUE(twice.ok());
    EXPECT_EQ(twice->pin_count, 2);
    EXPECT_EQ(twice->id, id);
    EXPECT_EQ(engine.unpin_document("c", id).code(), StatusCode::kNotFound);
    EXPECT_TRUE(engine.unpin_document("a", id).ok());
    EXPECT_EQ(engine.list_documents("a")[0].pin_count, 1);
    EXPECT_TRUE(engine.list_documents("a")[0].pinned);
    EXPECT_TRUE(engine.unpin_document("a", id).ok());
    EXPECT_EQ(engine.unpin_document("a", id).code(), StatusCode::kNotFound);
    engine.shutdown(false);
    EXPECT_EQ(engine.stats().blocks_pinned, 0);
    EXPECT_EQ(engine.stats().blocks_used, 0);
}

TEST(Tenants, DocumentIdsDependOnTheHashKeyAndTheTenant) {
    const std::vector<int32_t> doc = {5, 6, 7, 8, 9};
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 8;
    c.cache_hash_key = 42;
    EngineCore one(*model().model, *model().tokenizer, c), two(*model().model, *model().tokenizer, c);
    EXPECT_EQ(one.scheduler().documents().id("", doc), two.scheduler().documents().id("", doc));
    EXPECT_NE(one.scheduler().documents().id("", doc), one.scheduler().documents().id("x", doc));
    c.cache_hash_key = 43;
    EngineCore other_key(*model().model, *model().tokenizer, c);
    EXPECT_NE(one.scheduler().documents().id("", doc), other_key.scheduler().documents().id("", doc));
    c.cache_hash_key = 0;  // random per engine
    EngineCore random_a(*model().model, *model().tokenizer, c), random_b(*model().model, *model().tokenizer, c);
    EXPECT_NE(random_a.scheduler().documents().id("", doc), random_b.scheduler().documents().id("", doc));
}

TEST(Documents, TheRegistryStaysBoundedByThePoolWhateverClientsSend) {
    // Every request brings a document never seen before, under a tenant never seen before: the
    // registry must forget evicted documents instead of remembering every one (a memory leak any
    // client could drive).
    std::mt19937_64 rng(testing::test_seed() + 690);
    EngineConfig c = config(CacheMode::kLazy, 1);
    c.kv_num_blocks = 24;
    EngineCore s(*model().model, *model().tokenizer, c);
    int64_t most = 0;
    for (int i = 0; i < 400; ++i) {
        auto h = s.add(request_of({random_tokens(rng, 20)}, random_tokens(rng, 3), 1, "tenant-" + std::to_string(i)));
        ASSERT_TRUE(h.ok()) << h.status().to_string();
        run_all(s);
        most = std::max(most, s.scheduler().documents().num_entries());
    }
    EXPECT_LE(most, 2 * 24 + 64 + 1);
    EXPECT_GT(most, 24);  // it did fill up: the bound was what held it
    // A document still cached is still known after pruning.
    const auto doc = random_tokens(rng, 20);
    ASSERT_TRUE(s.add(request_of({doc}, random_tokens(rng, 3), 1, "keep")).ok());
    run_all(s);
    EXPECT_TRUE(s.scheduler().documents().tokens("keep", s.scheduler().documents().id("keep", doc)).has_value());
}

}  // namespace
}  // namespace lazyattn::engine
