// The store in the engine: a second engine (a fresh SyncEngine over the same directory, as a
// restarted process would be) serves documents a first engine computed with no document token
// prefilled and the same greedy output; a corrupt entry is never used; variants (lazy-k's raw
// keys, another tenant) never read each other's entries; a full RAM pool loses nothing the
// store holds; replicas sharing a Redis Cluster serve each other's documents through a reshard
// and a lost node.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "redis_server.h"
#include "scheduler_fixture.h"
#include "store/disk_tier.h"
#include "store_test_util.h"

namespace lazyattn::engine {
namespace {

using store::testing::TempDir;
using testing_support::config;
using testing_support::model;
using testing_support::random_tokens;

RagRequest request_of(std::vector<std::vector<int32_t>> segments, std::vector<int32_t> tail, std::string tenant = "") {
    RagRequest r;
    r.tenant = std::move(tenant);
    r.segments = std::move(segments);
    r.tail = std::move(tail);
    r.max_tokens = 8;
    r.ignore_eos = true;
    return r;
}

EngineConfig store_config(const std::string& dir, CacheMode mode = CacheMode::kLazy) {
    EngineConfig c = config(mode, 4);
    c.kv_stores = {dir};
    return c;
}

struct Docs {
    std::vector<std::vector<int32_t>> docs;
    std::vector<int32_t> tail;
};

Docs make_docs(uint64_t seed) {
    std::mt19937_64 rng(testing::test_seed() + seed);
    Docs d;
    for (int32_t n : {40, 16, 33}) d.docs.push_back(random_tokens(rng, n));
    d.tail = random_tokens(rng, 5);
    return d;
}

RagResult run(const EngineConfig& c, const RagRequest& r, SchedulerStats* stats = nullptr) {
    SyncEngine engine(*model().model, *model().tokenizer, c);
    EXPECT_TRUE(engine.status().ok()) << engine.status().to_string();
    auto result = engine.run(r);
    EXPECT_TRUE(result.ok()) << result.status().to_string();
    // Writes are asynchronous: drained before the statistics are read (the engine's destructor
    // would drain them too, after the read).
    if (auto* store = engine.core().kv_store().store()) store->flush();
    if (stats != nullptr) *stats = engine.scheduler().stats();
    return std::move(result).value();
}

TEST(StoreEngine, ASecondEngineServesTheFirstOnesDocumentsWithoutPrefillingThem) {
    TempDir dir;
    const Docs d = make_docs(1);
    SchedulerStats first_stats, second_stats;
    const RagResult first = run(store_config(dir.path), request_of(d.docs, d.tail), &first_stats);
    EXPECT_EQ(first_stats.segment_job_tokens, 40 + 16 + 33);
    EXPECT_EQ(first_stats.segment_store_hits, 0);
    ASSERT_EQ(first_stats.store.tiers.size(), 1u);
    EXPECT_EQ(first_stats.store.tiers[0].misses, 3);

    // A fresh engine (its RAM pool empty), the documents in another order.
    const RagResult second =
        run(store_config(dir.path), request_of({d.docs[2], d.docs[0], d.docs[1]}, d.tail), &second_stats);
    EXPECT_EQ(second_stats.segment_job_tokens, 0);
    EXPECT_EQ(second_stats.segment_store_hits, 3);
    EXPECT_EQ(second.stats.segments_from_store, 3);
    EXPECT_EQ(second.stats.prefill_tokens, int32_t(d.tail.size()));
    EXPECT_EQ(second.stats.reused_tokens, 40 + 16 + 33);
    EXPECT_EQ(second_stats.store.tiers[0].hits, 3);
    EXPECT_GT(second_stats.store.tiers[0].bytes_read, 0);

    // Same greedy output as computing the documents: the reference without any store.
    const RagResult reference = run(config(CacheMode::kLazy, 4), request_of({d.docs[2], d.docs[0], d.docs[1]}, d.tail));
    EXPECT_EQ(second.token_ids, reference.token_ids);
    EXPECT_EQ(first.token_ids.size(), 8u);
}

TEST(StoreEngine, ACorruptEntryIsRecomputedAndReplaced) {
    TempDir dir;
    const Docs d = make_docs(2);
    const RagResult first = run(store_config(dir.path), request_of(d.docs, d.tail));
    // Flip one byte in the middle of every entry.
    int damaged = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path)) {
        if (!e.is_regular_file()) continue;
        std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
        const auto size = std::filesystem::file_size(e.path());
        f.seekg(std::streamoff(size / 2));
        char c;
        f.read(&c, 1);
        c ^= 0x10;
        f.seekp(std::streamoff(size / 2));
        f.write(&c, 1);
        ++damaged;
    }
    ASSERT_EQ(damaged, 3);
    SchedulerStats stats;
    const RagResult second = run(store_config(dir.path), request_of(d.docs, d.tail), &stats);
    EXPECT_EQ(stats.store.tiers[0].rejected, 3);
    EXPECT_EQ(stats.segment_store_hits, 0);
    EXPECT_EQ(stats.segment_job_tokens, 40 + 16 + 33);
    EXPECT_EQ(stats.store.tiers[0].writes, 3);  // overwritten, not skipped
    EXPECT_EQ(second.token_ids, first.token_ids);
    const RagResult third = run(store_config(dir.path), request_of(d.docs, d.tail), &stats);
    EXPECT_EQ(stats.segment_store_hits, 3);
    EXPECT_EQ(third.token_ids, first.token_ids);
}

TEST(StoreEngine, VariantsAndTenantsNeverShareEntries) {
    TempDir dir;
    const Docs d = make_docs(3);
    run(store_config(dir.path), request_of(d.docs, d.tail));
    SchedulerStats stats;
    // lazy-k stores keys unrotated: another variant, so no hit (and its own entries written).
    run(store_config(dir.path, CacheMode::kLazyK), request_of(d.docs, d.tail), &stats);
    EXPECT_EQ(stats.segment_store_hits, 0);
    run(store_config(dir.path), request_of(d.docs, d.tail, "other-tenant"), &stats);
    EXPECT_EQ(stats.segment_store_hits, 0);
    // block-attn reads the same rotated entries as lazy.
    run(store_config(dir.path, CacheMode::kBlockAttn), request_of(d.docs, d.tail), &stats);
    EXPECT_EQ(stats.segment_store_hits, 3);
}

TEST(StoreEngine, EvictionFromASmallPoolLosesNothingTheStoreHolds) {
    TempDir dir;
    std::mt19937_64 rng(testing::test_seed() + 4);
    EngineConfig c = store_config(dir.path);
    c.kv_num_blocks = 24;  // room for about one request's documents at a time
    std::vector<std::vector<int32_t>> docs;
    for (int i = 0; i < 12; ++i) docs.push_back(random_tokens(rng, 64));
    const auto tail = random_tokens(rng, 4);
    SyncEngine engine(*model().model, *model().tokenizer, c);
    std::vector<RagResult> first;
    for (int i = 0; i < 6; ++i) first.push_back(*engine.run(request_of({docs[2 * i], docs[2 * i + 1]}, tail)));
    const int64_t computed = engine.scheduler().stats().segment_job_tokens;
    EXPECT_EQ(computed, 12 * 64);
    // The first request's documents were evicted by the later ones; the store gives them back.
    const RagResult again = *engine.run(request_of({docs[1], docs[0]}, tail));
    EXPECT_EQ(engine.scheduler().stats().segment_job_tokens, computed);
    EXPECT_EQ(again.stats.segments_from_store, 2);
    EXPECT_EQ(again.stats.prefill_tokens, int32_t(tail.size()));
}

// Connections a redis-server has accepted so far (INFO's total_connections_received), less the
// one this question opens.
int64_t connections_received(const store::testing::RedisServer& server) {
    const std::string info =
        store::testing::command_output("redis-cli -p " + std::to_string(server.port()) + " INFO stats");
    const std::string field = "total_connections_received:";
    const size_t at = info.find(field);
    EXPECT_NE(at, std::string::npos) << info;
    return at == std::string::npos ? -1 : std::atoll(info.c_str() + at + field.size()) - 1;
}

// Each --kv-store tier is opened once, by the engine: at start-up it asks a Redis one key on the
// read connection it then keeps (an unreachable tier is reported now, not at the first request),
// and a request's lookups and writes add only the writer's connection. (Before, the command line
// probed every tier with a client of its own and the engine opened it again.)
TEST(StoreEngine, ARedisTierIsConnectedOnceFromStartUp) {
    store::testing::RedisServer server;
    ASSERT_TRUE(server.running()) << "redis-server did not start (scripts/install_deps.sh installs it)";
    const int64_t before = connections_received(server);
    auto engine = SyncEngine::create(*model().model, *model().tokenizer, store_config(server.url()));
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    // The INFO question itself is one connection: counted off by connections_received.
    EXPECT_EQ(connections_received(server) - 1 - before, 1) << "start-up did not connect the tier exactly once";
    const Docs d = make_docs(9);
    ASSERT_TRUE((*engine)->run(request_of(d.docs, d.tail)).ok());
    (*engine)->core().kv_store().store()->flush();
    const SchedulerStats stats = (*engine)->scheduler().stats();
    ASSERT_EQ(stats.store.tiers.size(), 1u);
    EXPECT_EQ(stats.store.tiers[0].misses, 3);
    EXPECT_EQ(stats.store.tiers[0].writes, 3);
    EXPECT_EQ(connections_received(server) - 2 - before, 2) << "the reads and the writes: one connection each";
}

// A tier that does not answer at start-up is kept (retried later), left out, or refused, as
// EngineConfig::kv_store_unreachable says; the one that answers is used either way.
TEST(StoreEngine, AnUnreachableTierIsKeptSkippedOrRefusedAtStartUp) {
    TempDir dir;
    EngineConfig c = store_config(dir.path);
    c.kv_stores = {"redis://127.0.0.1:1", dir.path};
    c.kv_store_tier.read_timeout_ms = 200;
    c.kv_store_unreachable = store::UnreachableTiers::kRefuse;
    auto refused = SyncEngine::create(*model().model, *model().tokenizer, c);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(refused.status().message().find("redis://127.0.0.1:1 cannot be reached"), std::string::npos)
        << refused.status().to_string();
    for (const auto policy : {store::UnreachableTiers::kKeep, store::UnreachableTiers::kSkip}) {
        c.kv_store_unreachable = policy;
        auto engine = SyncEngine::create(*model().model, *model().tokenizer, c);
        ASSERT_TRUE(engine.ok()) << engine.status().to_string();
        const store::SegmentStore* st = (*engine)->core().kv_store().store();
        ASSERT_NE(st, nullptr);
        ASSERT_EQ(st->unreachable_at_open().size(), 1u);
        EXPECT_EQ(st->unreachable_at_open()[0].where, "redis://127.0.0.1:1");
        EXPECT_EQ(st->num_tiers(), policy == store::UnreachableTiers::kKeep ? 2 : 1);
    }
    c.kv_stores = {"redis://127.0.0.1:1"};
    c.kv_store_unreachable = store::UnreachableTiers::kSkip;
    EXPECT_EQ(SyncEngine::create(*model().model, *model().tokenizer, c).status().code(), StatusCode::kUnavailable)
        << "skipping the only tier leaves nothing to store in";
}

// Neighbour-conditioned copies (document_reuse "neighbours=K", `precompute --neighbours K`) are
// entries of their own: a second engine with the same corpus indexed reads them with no document
// token computed and the first engine's output, while the plain copy and another K miss.
TEST(StoreEngine, NeighbourConditionedCopiesAreEntriesOfTheirOwn) {
    TempDir dir;
    const Docs d = make_docs(5);
    // The first document shares tokens with the other two, so each has a neighbour.
    std::vector<std::vector<int32_t>> docs = d.docs;
    for (size_t i = 1; i < docs.size(); ++i) docs[i].insert(docs[i].begin() + 3, docs[0].begin(), docs[0].begin() + 5);
    RagRequest r = request_of(docs, d.tail);
    r.reuse.neighbours = 1;
    auto run_indexed = [&](const RagRequest& req, SchedulerStats* stats) {
        SyncEngine engine(*model().model, *model().tokenizer, store_config(dir.path));
        engine.scheduler().index_documents("", docs);
        auto result = engine.run(req);
        EXPECT_TRUE(result.ok()) << result.status().to_string();
        engine.core().kv_store().store()->flush();
        *stats = engine.scheduler().stats();
        return std::move(result).value();
    };
    SchedulerStats stats;
    const RagResult first = run_indexed(r, &stats);
    EXPECT_EQ(stats.segment_store_hits, 0);
    EXPECT_EQ(stats.store.tiers[0].writes, 3);  // the conditioned documents, not their prefixes
    const RagResult second = run_indexed(r, &stats);
    EXPECT_EQ(stats.segment_store_hits, 3);
    EXPECT_EQ(stats.segment_job_tokens, 0);
    EXPECT_EQ(second.token_ids, first.token_ids);
    RagRequest plain = r;
    plain.reuse = {};
    run_indexed(plain, &stats);
    EXPECT_EQ(stats.segment_store_hits, 0);
    RagRequest two = r;
    two.reuse.neighbours = 2;
    run_indexed(two, &stats);
    EXPECT_EQ(stats.segment_store_hits, 0);
    // The plain copies are in the store now too, and are what a plain request reads.
    run_indexed(plain, &stats);
    EXPECT_EQ(stats.segment_store_hits, 3);
}

// A document whose lookup found fewer neighbours than the request asks for is encoded for that
// request, but that copy is not the K-neighbour one: it is never written under its key, so a
// later engine with the corpus complete does not read it for good.
TEST(StoreEngine, ACopyWithFewerNeighboursThanAskedIsNotStored) {
    TempDir dir;
    const Docs d = make_docs(6);
    std::vector<std::vector<int32_t>> docs = d.docs;
    for (size_t i = 1; i < docs.size(); ++i) docs[i].insert(docs[i].begin() + 3, docs[0].begin(), docs[0].begin() + 5);
    RagRequest r = request_of(docs, d.tail);
    r.reuse.neighbours = 3;  // each document has two others to find
    SchedulerStats stats;
    for (int pass = 0; pass < 2; ++pass) {
        const RagResult result = run(store_config(dir.path), r, &stats);
        EXPECT_EQ(result.token_ids.size(), 8u);
        EXPECT_EQ(stats.segment_store_hits, 0) << "pass " << pass;
        EXPECT_EQ(stats.store.tiers[0].writes, 0) << "pass " << pass << ": a copy short of neighbours was stored";
        EXPECT_GE(stats.segment_job_tokens, 40 + 16 + 33 + 10);
    }
}

// Entries (not bookkeeping keys) a cluster node holds.
int entries_on(store::testing::RedisCluster& cluster, int node) {
    int n = 0;
    const std::string keys = cluster.cli(node, "--scan --pattern 'lazyattn:seg:{*}:*'");
    for (size_t from = 0; from < keys.size();) {
        size_t eol = keys.find('\n', from);
        if (eol == std::string::npos) eol = keys.size();
        const std::string k = keys.substr(from, eol - from);
        n += k.size() > 32 && k.find(':', k.find('}')) + 33 == k.size() ? 1 : 0;
        from = eol + 1;
    }
    return n;
}

// Replicas over one Redis Cluster (three masters), each seeded with another node: A computes a
// corpus and its entries land on every node; B computes none of it; B serves a stream through a
// reshard with nothing recomputed; with a node killed B keeps answering (that node's documents
// computed, the rest loaded), one warning for the outage, and when the node is back B's tier uses
// it again by itself. Every answer is A's.
TEST(StoreEngine, ReplicasShareARedisClusterThroughAReshardAndALostNode) {
    store::testing::RedisCluster cluster(3);
    ASSERT_TRUE(cluster.ok()) << "no Redis Cluster (scripts/install_deps.sh installs redis-server and redis-cli)";
    std::mt19937_64 rng(testing::test_seed() + 7);
    std::vector<std::vector<int32_t>> docs;
    // 24 documents, so that every node holds some of them whatever the seed (12 left a node
    // empty in ~2% of runs: 3 x (2/3)^12).
    for (int i = 0; i < 24; ++i) docs.push_back(random_tokens(rng, 64));
    const auto tail = random_tokens(rng, 4);
    auto replica = [&](int seed) {
        EngineConfig c = store_config(cluster.url(seed));
        c.kv_num_blocks = 24;  // about one request's documents: the others come from the store
        return std::make_unique<SyncEngine>(*model().model, *model().tokenizer, c);
    };
    std::vector<std::vector<int32_t>> answers;
    struct Pass {
        int from_store = 0, computed = 0, failed = 0, differ = 0;
    };
    auto pass = [&](SyncEngine& e) {
        Pass p;
        for (size_t i = 0; i < 6; ++i) {
            auto r = e.run(request_of({docs[4 * i], docs[4 * i + 1], docs[4 * i + 2], docs[4 * i + 3]}, tail));
            if (!r.ok() || r->finish_reason == engine::FinishReason::kError) {
                ++p.failed;
                continue;
            }
            p.from_store += r->stats.segments_from_store;
            p.computed += r->stats.segments_missed;
            if (answers.size() < 6) {
                answers.push_back(r->token_ids);
            } else if (r->token_ids != answers[i]) {
                ++p.differ;
            }
        }
        e.core().kv_store().store()->flush();
        return p;
    };
    auto a = replica(0);
    const Pass first = pass(*a);
    EXPECT_EQ(first.computed, 24);
    EXPECT_EQ(a->scheduler().stats().store.tiers[0].writes, 24);
    EXPECT_EQ(a->scheduler().stats().store.tiers[0].errors, 0);
    int total = 0;
    for (int n = 0; n < 3; ++n) {
        EXPECT_GT(entries_on(cluster, n), 0) << "node " << n;
        total += entries_on(cluster, n);
    }
    EXPECT_EQ(total, 24);

    auto b = replica(2);
    const Pass second = pass(*b);
    EXPECT_EQ(second.computed, 0);
    EXPECT_EQ(second.from_store, 24);
    EXPECT_EQ(second.failed + second.differ, 0);

    std::atomic<bool> done{false};
    bool moved = false;
    std::thread reshard([&] {
        moved = cluster.reshard(0, 1, 4000);
        done = true;
    });
    int passes = 0, from_store = 0;
    while (!done || passes == 0) {
        const Pass p = pass(*b);
        EXPECT_EQ(p.failed + p.differ + p.computed, 0) << "pass " << passes << " during the reshard";
        from_store += p.from_store;
        ++passes;
    }
    reshard.join();
    EXPECT_TRUE(moved) << "redis-cli --cluster reshard failed";
    EXPECT_GE(from_store, 20 * passes);
    EXPECT_EQ(b->scheduler().stats().store.tiers[0].errors, 0);

    const int on_node1 = entries_on(cluster, 1);
    ASSERT_GT(on_node1, 0);
    cluster.node(1).kill();
    const Pass lost = pass(*b);
    EXPECT_EQ(lost.failed + lost.differ, 0);
    EXPECT_GT(lost.computed, 0);
    EXPECT_GT(lost.from_store, 0);
    EXPECT_EQ(b->scheduler().stats().store.tiers[0].outages, 1);

    ASSERT_TRUE(cluster.node(1).start());
    ASSERT_TRUE(cluster.wait_ok());
    Pass back;
    for (int i = 0; i < 20; ++i) {  // the first passes rewrite node 1's share, then all of it loads
        back = pass(*b);
        EXPECT_EQ(back.failed + back.differ, 0);
        if (back.computed == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    EXPECT_EQ(back.computed, 0) << "the tier did not use the node again";
    EXPECT_GE(back.from_store, 20);
}

}  // namespace
}  // namespace lazyattn::engine
