// Conditioned copies made in the background (EngineConfig::condition_after, the `balanced`
// preset). The policy alone (no model): sightings counted per tenant, a task queued once,
// per-account and global caps, a cancelled task first again. On the tiny random model: a
// document read with neighbours=1@ready in N requests gets its conditioned copy, made only in
// steps without a request's prefill, then served, equal to what a request asking neighbours=1
// (what `precompute --neighbours 1` runs) computes, to float rounding (1e-5: the rows run in
// other batches); the store holds it under its conditioned key; a waiting request is
// admitted at once, the job cancelled for it and made again later; one tenant's copies are never
// another's; nothing leaks.
#include <algorithm>
#include <filesystem>
#include <random>

#include "engine/request/tenant.h"
#include "engine/reuse/conditioning.h"
#include "engine/reuse/neighbour_index.h"
#include "engine/scheduler/background_conditioning.h"
#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "reuse_fixture.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::engine {
namespace {

using namespace reuse_testing;

// --- The policy.

TEST(BackgroundPolicy, ADocumentIsQueuedOnceAfterNSightingsOfItsTenant) {
    BackgroundConditioning b({/*condition_after=*/3, /*max_queued=*/8, /*max_queued_per_account=*/4});
    const std::vector<int32_t> doc{5, 6, 7};
    EXPECT_FALSE(b.note("a", doc, 1));
    EXPECT_FALSE(b.note("b", doc, 1));  // another tenant counts apart
    EXPECT_FALSE(b.note("a", doc, 2));  // another K is another copy
    EXPECT_FALSE(b.note("a", doc, 1));
    EXPECT_TRUE(b.note("a", doc, 1));  // the third sighting of ("a", doc, 1)
    EXPECT_FALSE(b.note("a", doc, 1)) << "queued twice";
    EXPECT_EQ(b.stats().queued, 1);
    auto t = b.start_next();
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->tenant, "a");
    EXPECT_EQ(t->tokens, doc);
    EXPECT_EQ(t->neighbours, 1);
    EXPECT_FALSE(b.start_next().has_value()) << "one task runs at a time";
    EXPECT_FALSE(b.note("a", doc, 1)) << "queued while running";
    b.finished(*t, true);
    EXPECT_EQ(b.stats().done, 1);
    EXPECT_EQ(b.stats().running, 0);
    // Counted from zero again (its copy may be evicted later, then made again).
    EXPECT_FALSE(b.note("a", doc, 1));
    EXPECT_FALSE(b.note("a", doc, 1));
    EXPECT_TRUE(b.note("a", doc, 1));
}

TEST(BackgroundPolicy, AnAccountCannotFloodTheQueueNorKeepAnotherOut) {
    BackgroundConditioning b({/*condition_after=*/1, /*max_queued=*/6, /*max_queued_per_account=*/2});
    int queued = 0;
    for (int32_t i = 0; i < 10; ++i) {
        // One key under many cache_salts is one account.
        queued += b.note(salted_tenant("flood", "salt" + std::to_string(i)), {100 + i}, 1);
    }
    EXPECT_EQ(queued, 2);
    EXPECT_EQ(b.stats().refused, 8);
    EXPECT_EQ(b.queued_for_account("flood"), 2);
    // Other accounts still get their own share, up to the global cap.
    for (int32_t i = 0; i < 3; ++i) EXPECT_TRUE(b.note("key" + std::to_string(i), {7}, 1));
    EXPECT_FALSE(b.note("key0", {8}, 1) && b.note("key0", {9}, 1)) << "past the per-account cap";
    EXPECT_EQ(b.stats().queued, 6);
    EXPECT_FALSE(b.note("late", {1}, 1)) << "past the global cap";
    // A refused sighting is retried on the next one, once there is room.
    auto t = b.start_next();
    ASSERT_TRUE(t.has_value());
    b.finished(*t, true);
    EXPECT_TRUE(b.note("late", {1}, 1));
}

TEST(BackgroundPolicy, ACancelledTaskRunsFirstWhenThereIsRoomAgain) {
    BackgroundConditioning b({1, 8, 8});
    ASSERT_TRUE(b.note("t", {1}, 1));
    ASSERT_TRUE(b.note("t", {2}, 1));
    auto first = b.start_next();
    ASSERT_TRUE(first.has_value());
    b.cancelled(*first);
    EXPECT_EQ(b.stats().cancelled, 1);
    EXPECT_EQ(b.stats().queued, 2);
    auto again = b.start_next();
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->tokens, first->tokens);
    // Postponed (no room yet) is not a cancellation.
    b.postponed(*again);
    EXPECT_EQ(b.stats().cancelled, 1);
    EXPECT_EQ(b.start_next()->tokens, first->tokens);
}

TEST(BackgroundPolicy, TheSightingsKeptAreBounded) {
    BackgroundLimits limits{2, 8, 8};
    limits.max_tracked = 4;
    BackgroundConditioning b(limits);
    EXPECT_FALSE(b.note("t", {1}, 1));
    for (int32_t i = 2; i < 10; ++i) b.note("t", {i}, 1);  // pushes {1} out
    EXPECT_FALSE(b.note("t", {1}, 1)) << "a forgotten document counts from zero";
    EXPECT_TRUE(b.note("t", {1}, 1));
}

// --- In the engine.

class Tokens {
public:
    explicit Tokens(uint64_t salt) : rng_(testing::test_seed() + salt) {}
    std::vector<int32_t> make(int32_t n) {
        std::vector<int32_t> t(n);
        for (auto& x : t) x = next_++;
        std::shuffle(t.begin(), t.end(), rng_);
        return t;
    }

private:
    std::mt19937_64 rng_;
    int32_t next_ = 3;
};

std::vector<int32_t> sharing(std::vector<int32_t> doc, const std::vector<int32_t>& from, int32_t count) {
    doc.insert(doc.begin() + doc.size() / 2, from.begin(), from.begin() + count);
    return doc;
}

DocumentReuse when_ready(int32_t k) {
    DocumentReuse r;
    r.neighbours = k;
    r.neighbours_when_ready = true;
    return r;
}

DocumentReuse conditioned(int32_t k) {
    DocumentReuse r;
    r.neighbours = k;
    return r;
}

EngineConfig background_config(int32_t condition_after, int32_t rows_per_step = 64) {
    EngineConfig c = config(CacheMode::kLazy);
    c.condition_after = condition_after;
    c.background_rows_per_step = rows_per_step;
    return c;
}

std::unique_ptr<SyncEngine> engine_with(const EngineConfig& c) {
    return std::make_unique<SyncEngine>(*tiny_model().model, *tiny_model().tokenizer, c);
}

// The key of `doc`'s copy conditioned on k neighbours from e's index as it stands.
ConditioningKey key_now(SyncEngine& e, const std::vector<int32_t>& doc, int32_t k, const std::string& tenant = "") {
    return conditioning_prefix(e.scheduler().neighbour_index(), tenant, doc, k).key;
}

// The whole flow: plain until the N-th request, the copy made in the background (never in a
// step with a request's prefill), then served, equal to a request-made neighbours=1 copy.
TEST(BackgroundConditioning, ARecurringDocumentGetsItsConditionedCopyThenReadsIt) {
    for (int32_t rows : {64, 16}) {  // one chunk, then several steps of background work
        Tokens tok(11);
        const auto neighbour = tok.make(30);
        const auto doc = sharing(tok.make(37), neighbour, 4);
        auto e = engine_with(background_config(/*condition_after=*/2, rows));
        auto req = [&](int32_t q) { return request_of(tok.make(5), {neighbour, doc}, tok.make(q), when_ready(1)); };
        // The first request: both documents read plain, counted once.
        ASSERT_TRUE(e->run(req(4)).ok());
        EXPECT_EQ(e->scheduler().stats().background.queued, 0);
        EXPECT_EQ(e->scheduler().stats().conditioned_served, 0);
        EXPECT_EQ(e->scheduler().stats().conditioned_lookups, 2);
        // The second: both queued. Their jobs run only in steps without a request's prefill.
        auto h = e->core().add(req(6));
        ASSERT_TRUE(h.ok());
        int64_t prefill_steps_with_background = 0;
        while (!(*h)->finished()) {
            const auto before = e->scheduler().stats();
            const bool prompt_pending =
                e->scheduler().find((*h)->id()) == nullptr || !e->scheduler().find((*h)->id())->prompt_done();
            ASSERT_TRUE(e->core().step());
            if (prompt_pending && e->scheduler().stats().background_rows > before.background_rows) {
                ++prefill_steps_with_background;
            }
        }
        EXPECT_EQ(prefill_steps_with_background, 0) << "background rows ran beside a request's prefill";
        e->run_background();
        const auto s = e->scheduler().stats();
        EXPECT_EQ(s.background.done, 2) << "rows per step " << rows;
        EXPECT_EQ(s.background.queued + s.background.running, 0);
        EXPECT_GT(s.background_rows, 0);
        // The third reads both conditioned copies, computing no document token.
        const int64_t job_tokens = s.segment_job_tokens;
        RagRequest third = req(5);
        auto got = e->tail_logits(third);
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        EXPECT_EQ(e->scheduler().stats().conditioned_served, 2);
        EXPECT_EQ(e->scheduler().stats().segment_job_tokens - job_tokens, int64_t(third.segments[0].size()))
            << "only the new preamble is computed";
        // What a request asking for neighbours=1 makes on an engine with the same corpus.
        auto fresh = make_engine(CacheMode::kLazy);
        fresh->scheduler().index_documents("", std::vector<std::vector<int32_t>>{neighbour, doc});
        RagRequest asked = third;
        asked.reuse = conditioned(1);
        auto want = fresh->tail_logits(asked);
        ASSERT_TRUE(want.ok());
        // Not bit for bit: the rows run in other batches (one chunk or several, beside other
        // work), which changes float rounding; equal to it, as any two batchings are.
        testing::expect_close(*got, *want, 1e-5, 1.0, "background copy vs a request's");
        // And it differs from the plain reading (the copy is not the plain one).
        RagRequest plain = third;
        plain.reuse = {};
        auto p = e->tail_logits(plain);
        EXPECT_GT(testing::max_relative_difference(*p, *got), 1e-3);
        // Listed with its neighbours.
        const auto listed = e->scheduler().documents().list("");
        const std::string doc_id = e->scheduler().documents().id("", doc);
        const std::string neighbour_id = e->scheduler().documents().id("", neighbour);
        bool found = false;
        for (const DocumentInfo& d : listed) {
            if (d.id != doc_id) continue;
            ASSERT_EQ(d.conditioned.size(), 1u);
            EXPECT_EQ(d.conditioned[0].neighbours, 1);
            EXPECT_EQ(d.conditioned[0].neighbour_ids, std::vector<std::string>{neighbour_id});
            EXPECT_EQ(d.conditioned[0].prefix_tokens, int32_t(neighbour.size()));
            EXPECT_TRUE(d.conditioned[0].cached);
            found = true;
        }
        EXPECT_TRUE(found);
        expect_pool_whole(*e);
    }
}

TEST(BackgroundConditioning, OffByDefaultAndForRequestsThatDoNotAcceptTheCopy) {
    Tokens tok(12);
    const auto neighbour = tok.make(20);
    const auto doc = sharing(tok.make(25), neighbour, 4);
    auto off = make_engine(CacheMode::kLazy);  // condition_after 0
    for (int i = 0; i < 3; ++i)
        ASSERT_TRUE(off->run(request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1))).ok());
    EXPECT_FALSE(off->scheduler().has_background_work());
    EXPECT_EQ(off->scheduler().stats().background.started, 0);
    auto on = engine_with(background_config(1));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(on->run(request_of(tok.make(4), {neighbour, doc}, tok.make(3), {})).ok());
    EXPECT_FALSE(on->scheduler().has_background_work()) << "plain requests never ask for copies";
    expect_pool_whole(*off);
    expect_pool_whole(*on);
}

// A request that arrives while a background job holds blocks it needs is admitted at the next
// step: the job is cancelled (its task queued again) and made once the pool has room.
TEST(BackgroundConditioning, AWaitingRequestIsNeverBlockedBehindBackgroundWork) {
    Tokens tok(13);
    const auto neighbour = tok.make(40);
    const auto doc = sharing(tok.make(60), neighbour, 4);
    EngineConfig c = background_config(1, /*rows_per_step=*/16);
    c.kv_num_blocks = 16;
    auto e = engine_with(c);
    RagRequest first = request_of(tok.make(3), {neighbour, doc}, tok.make(3), when_ready(1));
    first.max_tokens = 1;  // no decode step, so no background row yet
    ASSERT_TRUE(e->run(first).ok());
    ASSERT_TRUE(e->scheduler().has_background_work());
    ASSERT_EQ(e->scheduler().stats().background_rows, 0);
    ASSERT_TRUE(e->core().step());  // a job starts and computes its first rows
    ASSERT_EQ(e->scheduler().stats().background.running, 1);
    // Needs 14 of the 16 blocks: only there once the job's are freed.
    RagRequest big = request_of(tok.make(100), {tok.make(100)}, tok.make(8), {});
    big.max_tokens = 4;
    auto h = e->core().add(big);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    ASSERT_TRUE(e->core().step());
    const SequenceState* s = e->scheduler().find((*h)->id());
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->admitted) << "the request waited for background work";
    EXPECT_EQ(e->scheduler().stats().background.cancelled, 1);
    while (!(*h)->finished()) ASSERT_TRUE(e->core().step());
    EXPECT_EQ((*h)->wait().token_ids.size(), 4u);
    EXPECT_EQ(e->scheduler().stats().preemptions, 0);
    e->run_background();
    EXPECT_EQ(e->scheduler().stats().background.done, 2) << "the cancelled copy is made later";
    expect_pool_whole(*e);
}

// The central invariant under the preset: lazy, lazy-k and block-attn read the background copies
// to the same logits.
TEST(BackgroundConditioning, LazyLazyKAndBlockAttnAgreeOnBackgroundCopies) {
    std::vector<std::vector<float>> logits;
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn}) {
        Tokens tok(16);  // the same tokens in every mode
        const auto neighbour = tok.make(33);
        const auto doc = sharing(tok.make(29), neighbour, 5);
        EngineConfig c = config(mode);
        c.condition_after = 1;
        auto e = engine_with(c);
        ASSERT_TRUE(e->run(request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1))).ok());
        e->run_background();
        ASSERT_EQ(e->scheduler().stats().background.done, 2) << cache_mode_name(mode);
        auto got = e->tail_logits(request_of(tok.make(6), {doc, neighbour}, tok.make(5), when_ready(1)));
        ASSERT_TRUE(got.ok());
        EXPECT_EQ(e->scheduler().stats().conditioned_served, 2) << cache_mode_name(mode);
        logits.push_back(*got);
        expect_pool_whole(*e);
    }
    testing::expect_close(logits[1], logits[0], 1e-4, 1.0, "lazy-k vs lazy");
    testing::expect_close(logits[2], logits[0], 1e-4, 1.0, "block-attn vs lazy");
}

// One tenant's sightings never make or serve another tenant's copy.
TEST(BackgroundConditioning, ATenantsCopiesAreItsOwn) {
    Tokens tok(14);
    const auto neighbour = tok.make(20);
    const auto doc = sharing(tok.make(25), neighbour, 4);
    auto e = engine_with(background_config(2));
    auto req = [&](const std::string& tenant) {
        RagRequest r = request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1));
        r.tenant = tenant;
        return r;
    };
    ASSERT_TRUE(e->run(req("alice")).ok());
    ASSERT_TRUE(e->run(req("bob")).ok());  // one sighting each: nothing queued
    e->run_background();
    EXPECT_EQ(e->scheduler().stats().background.started, 0);
    ASSERT_TRUE(e->run(req("alice")).ok());
    e->run_background();
    EXPECT_EQ(e->scheduler().stats().background.done, 2);
    const int64_t served = e->scheduler().stats().conditioned_served;
    ASSERT_TRUE(e->run(req("bob")).ok());
    EXPECT_EQ(e->scheduler().stats().conditioned_served, served) << "bob read alice's copies";
    ASSERT_TRUE(e->run(req("alice")).ok());
    EXPECT_EQ(e->scheduler().stats().conditioned_served, served + 2);
    expect_pool_whole(*e);
}

// The copy goes to the store under the conditioned key (neighbours=1 in its variant: apart from
// the plain entry), and a restarted engine with no background work serves it from there, as a
// neighbours=1 request's own copy reads.
TEST(BackgroundConditioning, TheStoreHoldsTheCopyUnderItsConditionedKey) {
    struct Dir {
        std::string path;
        Dir() {
            std::string t = (std::filesystem::temp_directory_path() / "lazyattn-bg-XXXXXX").string();
            path = mkdtemp(t.data());
        }
        ~Dir() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    } dir;
    Tokens tok(15);
    const auto neighbour = tok.make(30);
    const auto doc = sharing(tok.make(37), neighbour, 4);
    const RagRequest first = request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1));
    {
        EngineConfig c = background_config(1);
        c.kv_stores = {dir.path};
        auto e = engine_with(c);
        ASSERT_TRUE(e->run(first).ok());
        e->run_background();
        ASSERT_EQ(e->scheduler().stats().background.done, 2);
        auto& store = e->core().kv_store();
        store.store()->flush();
        const ConditioningKey doc_key = key_now(*e, doc, 1), neighbour_key = key_now(*e, neighbour, 1);
        EXPECT_TRUE(store.contains("", doc, doc_key)) << "no entry under the conditioned key";
        EXPECT_TRUE(store.contains("", neighbour, neighbour_key));
        EXPECT_NE(store.key("", doc, doc_key), store.key("", doc)) << "the key names the conditioning";
        EXPECT_NE(doc_key, neighbour_key) << "each names its own neighbours";
        EXPECT_FALSE(store.contains("", doc, key_now(*e, doc, 2)));
        // The neighbours used are recorded with the copy: its key, recomputed from them, is its own.
        for (const DocumentInfo& d : e->scheduler().documents().list("")) {
            for (const ConditionedCopyInfo& c : d.conditioned) {
                EXPECT_TRUE(c.key == doc_key || c.key == neighbour_key);
                EXPECT_EQ(c.key.prefix_tokens, c.prefix_tokens);
            }
        }
    }
    EngineConfig c = config(CacheMode::kLazy);
    c.kv_stores = {dir.path};
    auto e = engine_with(c);
    const RagRequest again = request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1));
    auto got = e->tail_logits(again);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(e->scheduler().stats().conditioned_served, 2);
    EXPECT_EQ(e->scheduler().stats().segment_store_hits, 2);
    auto fresh = make_engine(CacheMode::kLazy);
    fresh->scheduler().index_documents("", std::vector<std::vector<int32_t>>{neighbour, doc});
    RagRequest asked = again;
    asked.reuse = conditioned(1);
    auto want = fresh->tail_logits(asked);
    ASSERT_TRUE(want.ok());
    testing::expect_close(*got, *want, 1e-5, 1.0, "the stored background copy vs a request's own");
}

// A copy is named by the neighbours it was conditioned on, not by K alone: an engine whose index
// now gives a document other neighbours (restarted on another corpus, or its corpus grew) never
// serves the copy conditioned on the old ones, from the store or RAM; it reads the document plain,
// makes the new copy in the background, then serves that one, equal to what a neighbours=1
// request computes on the new index.
TEST(BackgroundConditioning, ACopyConditionedOnOtherNeighboursIsNeverServed) {
    struct Dir {
        std::string path;
        Dir() {
            std::string t = (std::filesystem::temp_directory_path() / "lazyattn-bg-XXXXXX").string();
            path = mkdtemp(t.data());
        }
        ~Dir() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    } dir;
    Tokens tok(17);
    const auto neighbour = tok.make(30);
    const auto doc = sharing(tok.make(37), neighbour, 4);
    // Shares more of doc than `neighbour` does (doc's own first tokens) and nothing with
    // `neighbour`: doc's nearest once indexed; neighbour's stays doc.
    const auto closer = sharing(tok.make(30), doc, 12);
    const RagRequest first = request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1));
    ConditioningKey old_doc_key;
    {
        EngineConfig c = background_config(1);
        c.kv_stores = {dir.path};
        auto e = engine_with(c);
        ASSERT_TRUE(e->run(first).ok());
        e->run_background();
        ASSERT_EQ(e->scheduler().stats().background.done, 2);
        e->core().kv_store().store()->flush();
        old_doc_key = key_now(*e, doc, 1);
        // Same engine, its corpus grown: doc's copy on `neighbour` is no longer what it asks for.
        e->scheduler().index_documents("", std::vector<std::vector<int32_t>>{closer});
        ASSERT_NE(key_now(*e, doc, 1), old_doc_key) << "the fixture's corpus does not change doc's neighbours";
        const int64_t served = e->scheduler().stats().conditioned_served;
        RagRequest r = request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1));
        r.max_tokens = 1;
        ASSERT_TRUE(e->run(r).ok());
        EXPECT_EQ(e->scheduler().stats().conditioned_served - served, 1) << "RAM served doc's copy on old neighbours";
    }
    // Restarted on a corpus where doc's nearest is `closer`: the store's copy on `neighbour` is a miss.
    EngineConfig c = background_config(1);
    c.kv_stores = {dir.path};
    auto e = engine_with(c);
    e->scheduler().index_documents("", std::vector<std::vector<int32_t>>{closer});
    RagRequest again = request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1));
    auto got = e->tail_logits(again);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(e->scheduler().stats().conditioned_served, 1) << "served doc's copy conditioned on other neighbours";
    EXPECT_TRUE(e->core().kv_store().contains("", doc, old_doc_key)) << "the old copy is still in the store";
    auto fresh = make_engine(CacheMode::kLazy);
    fresh->scheduler().index_documents("", std::vector<std::vector<int32_t>>{closer, neighbour, doc});
    RagRequest asked = again;
    asked.reuse = conditioned(1);
    auto want = fresh->tail_logits(asked);
    ASSERT_TRUE(want.ok());
    // Doc read plain here, conditioned (on closer) there: the first time they differ...
    EXPECT_GT(testing::max_relative_difference(*got, *want), 1e-3);
    // ...then the copy on closer is made in the background and served, as a neighbours=1 request
    // on this corpus computes it.
    e->run_background();
    EXPECT_EQ(e->scheduler().stats().background.done, 1);
    auto next = e->tail_logits(again);
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(e->scheduler().stats().conditioned_served, 3);
    testing::expect_close(*next, *want, 1e-5, 1.0, "the copy on the new neighbours vs a request's own");
    expect_pool_whole(*e);
}

// The choices of one request (n > 1) read one decision: a copy published between their
// admissions serves none of them (the first read plain, so all do), while a request of its own
// admitted beside them reads it.
TEST(BackgroundConditioning, AllChoicesOfARequestReadTheCopiesTheFirstFound) {
    Tokens tok(18);
    const auto neighbour = tok.make(30);
    const auto doc = sharing(tok.make(37), neighbour, 4);
    auto e = engine_with(background_config(1));
    RagRequest seen = request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1));
    seen.max_tokens = 1;
    ASSERT_TRUE(e->run(seen).ok());  // both documents queued for their copies
    ASSERT_TRUE(e->scheduler().has_background_work());
    RagRequest choice = request_of(tok.make(4), {neighbour, doc}, tok.make(3), when_ready(1));
    choice.choice_group = 77;
    choice.max_tokens = 40;
    auto first = e->core().add(choice);
    ASSERT_TRUE(first.ok());
    // Admitted with no copy yet; the copies are made in its decode steps.
    while (e->scheduler().stats().background.done < 2) {
        ASSERT_FALSE((*first)->finished()) << "the copies were not made while the first choice ran";
        ASSERT_TRUE(e->core().step());
    }
    ASSERT_FALSE((*first)->finished());
    std::vector<std::shared_ptr<RequestHandle>> later;
    for (int i = 0; i < 2; ++i) {
        auto h = e->core().add(choice);
        ASSERT_TRUE(h.ok());
        later.push_back(*h);
    }
    RagRequest alone = choice;
    alone.choice_group = 0;
    auto other = e->core().add(alone);
    ASSERT_TRUE(other.ok());
    while (!(*first)->finished() || !later[0]->finished() || !later[1]->finished() || !(*other)->finished()) {
        ASSERT_TRUE(e->core().step());
    }
    EXPECT_EQ((*first)->stats().segments_conditioned, 0);
    const auto want = (*first)->wait().token_ids;
    for (const auto& h : later) {
        EXPECT_EQ(h->stats().segments_conditioned, 0) << "a later choice read a copy published after the first";
        EXPECT_EQ(h->stats().conditioned_lookups, 2);
        EXPECT_EQ(h->wait().token_ids, want) << "greedy choices of one prompt differ";
    }
    EXPECT_EQ((*other)->stats().segments_conditioned, 2) << "the copies were not there to read";
    expect_pool_whole(*e);
}

}  // namespace
}  // namespace lazyattn::engine
