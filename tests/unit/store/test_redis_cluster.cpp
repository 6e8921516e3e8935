// The Redis tier on a real Redis Cluster (three redis-server --cluster-enabled nodes on loopback,
// made by redis-cli --cluster create): the slot hash against Redis' published vector and against
// the nodes' own CLUSTER KEYSLOT; entries written through one seed land on every node and a
// tier seeded with another node reads them all; a reshard while reading and writing loses nothing
// and fails nothing; a killed node costs only its own slots and is used again when back; a hung
// node costs one deadline per back-off; the cap holds across the cluster and across two writers;
// bad configurations (two clusters in one URL, CLUSTERDOWN, gaps in the slot map) are errors,
// counted, never a hang. (Against the tier before clusters: every entry outside the seed's slots
// failed with MOVED and the account script was refused as cross-slot.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "redis_client.h"
#include "redis_server.h"
#include "store/redis_slots.h"
#include "store/redis_tier.h"
#include "store/segment_store.h"

namespace lazyattn::store {
namespace {

using namespace testing;

std::string key_of(int i) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%032x", i * 2654435761u + 0x1000);
    return buf;
}

std::vector<uint8_t> value_of(int i, size_t n = 4000) {
    std::vector<uint8_t> v(n);
    for (size_t j = 0; j < n; ++j) v[j] = uint8_t(i * 31 + j);
    return v;
}

// Entries ("lazyattn:seg:{tag}:<32 hex>") on one node, and their bytes.
int64_t entries_on(RedisCluster& c, int node, int64_t* bytes = nullptr) {
    RedisClient cli(c.node(node).port());
    int64_t n = 0, b = 0;
    for (const std::string& k : cli.keys("lazyattn:seg:{*}:*")) {
        if (k.size() < 32 || k.find(':', k.find('}')) + 33 != k.size()) continue;  // bookkeeping keys
        ++n;
        b += cli.integer({"STRLEN", k});
    }
    if (bytes != nullptr) *bytes = b;
    return n;
}

template <typename F>
bool eventually(F f, int seconds = 20) {
    for (int i = 0; i < seconds * 20; ++i) {
        if (f()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

std::unique_ptr<RedisTier> cluster_tier(const std::string& url, const TierOptions& o = {}) {
    auto a = parse_redis_url(url);
    EXPECT_TRUE(a.ok()) << a.status().to_string();
    return std::make_unique<RedisTier>(*a, url, o);
}

TEST(RedisSlots, Crc16AndHashTagsFollowRedis) {
    EXPECT_EQ(crc16("123456789"), 0x31C3);  // the test vector in Redis' cluster specification
    EXPECT_EQ(crc16(""), 0);
    EXPECT_EQ(key_slot("foo"), 12182);
    EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
    EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
    EXPECT_EQ(key_slot("foo{}{bar}"), crc16("foo{}{bar}") % 16384);  // empty tag: the whole key
    EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));
    EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));
    EXPECT_EQ(key_slot("foo{bar"), crc16("foo{bar") % 16384);  // no closing brace
}

TEST(RedisSlots, RedirectionsParseAndNonsenseDoesNot) {
    auto m = parse_redirect("MOVED 3999 127.0.0.1:6381");
    ASSERT_TRUE(m.has_value());
    EXPECT_FALSE(m->ask);
    EXPECT_EQ(m->slot, 3999);
    EXPECT_EQ(m->to.host, "127.0.0.1");
    EXPECT_EQ(m->to.port, 6381);
    auto a = parse_redirect("ASK 1 :7000");
    ASSERT_TRUE(a.has_value());
    EXPECT_TRUE(a->ask);
    EXPECT_EQ(a->to.host, "");
    for (const char* bad : {"MOVED", "MOVED x h:1", "MOVED 16384 h:1", "ASK 1 h", "ASK 1 h:0", "ERR MOVED 1 h:1",
                            "CLUSTERDOWN Hash slot not served"}) {
        EXPECT_FALSE(parse_redirect(bad).has_value()) << bad;
    }
}

TEST(RedisSlots, ClusterUrlsParse) {
    auto a = parse_redis_url("redis://:pw@10.0.0.1:7000,10.0.0.2,h3:7002");
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_EQ(a->seeds.size(), 3u);
    EXPECT_EQ(a->seeds[1].str(), "10.0.0.2:6379");
    EXPECT_EQ(a->seeds[2].str(), "h3:7002");
    EXPECT_EQ(a->password, "pw");
    for (const char* bad : {"redis://h:1,", "redis://h:1,,h:2", "redis://h:1,h:x", "redis://h:1,h:1"}) {
        EXPECT_EQ(parse_redis_url(bad).status().code(), StatusCode::kInvalidArgument) << bad;
    }
}

class RedisClusterTest : public ::testing::Test {
protected:
    void SetUp() override {
        cluster_ = std::make_unique<RedisCluster>(3);
        ASSERT_TRUE(cluster_->ok()) << "no Redis Cluster (scripts/install_deps.sh installs redis-server and redis-cli)";
    }
    RedisCluster& c() { return *cluster_; }
    std::unique_ptr<RedisCluster> cluster_;
};

TEST_F(RedisClusterTest, KeySlotsAgreeWithTheNodes) {
    for (const std::string& k : {std::string("lazyattn:seg:{b0}:x"), std::string("a{b}c"), key_of(1), key_of(2),
                                 std::string("{}x"), std::string("x{y}")}) {
        EXPECT_EQ(key_slot(k), c().keyslot(k)) << k;
    }
}

TEST_F(RedisClusterTest, EntriesLandOnEveryNodeAndAnotherSeedReadsThemAll) {
    auto a = cluster_tier(c().url(0));
    for (int i = 0; i < 60; ++i) {
        auto put = a->put(key_of(i), value_of(i), false);
        ASSERT_TRUE(put.ok()) << i << ": " << put.status().to_string();
        EXPECT_TRUE(*put);
    }
    EXPECT_TRUE(a->is_cluster());
    EXPECT_FALSE(*a->put(key_of(0), value_of(99), false));  // NX holds on a cluster too
    int64_t total = 0;
    for (int n = 0; n < 3; ++n) {
        const int64_t here = entries_on(c(), n);
        EXPECT_GE(here, 8) << "node " << n << " holds too few of 60 entries";
        total += here;
    }
    EXPECT_EQ(total, 60);
    // A replica seeded with another node (and one given every node) reads every entry.
    for (const std::string& url : {c().url(2), "redis://" + c().node(1).address() + "," + c().node(2).address()}) {
        auto b = cluster_tier(url);
        for (int i = 0; i < 60; ++i) {
            auto got = b->get(key_of(i));
            ASSERT_TRUE(got.ok()) << url << " " << i << ": " << got.status().to_string();
            EXPECT_EQ(std::vector<uint8_t>(got->bytes.begin(), got->bytes.end()), value_of(i));
            EXPECT_TRUE(*b->contains(key_of(i)));
        }
        EXPECT_EQ(b->get(key_of(1000)).status().code(), StatusCode::kNotFound);
    }
    EXPECT_EQ(a->usage().bytes, 60 * 4000);
}

TEST_F(RedisClusterTest, AReshardWhileReadingAndWritingLosesAndFailsNothing) {
    auto tier = cluster_tier(c().url(0));
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(tier->put(key_of(i), value_of(i, 20000), false).ok());
    const int64_t on_node1 = entries_on(c(), 1);
    std::atomic<bool> stop{false};
    std::atomic<int64_t> reads{0}, bad_reads{0}, writes{0}, bad_writes{0};
    std::string first_error;
    std::thread reader([&] {
        while (!stop) {
            for (int i = 0; i < 60; ++i) {
                auto got = tier->get(key_of(i));
                ++reads;
                if (!got.ok() || got->bytes.size() != 20000) {
                    if (bad_reads++ == 0) first_error = got.status().to_string();
                }
            }
        }
    });
    std::thread writer([&] {
        for (int i = 100; !stop; ++i) {
            auto put = tier->put(key_of(i), value_of(i, 20000), false);
            ++writes;
            if (!put.ok() || !*put) ++bad_writes;
        }
    });
    const bool moved = c().reshard(0, 1, 3000) && c().reshard(2, 1, 3000);
    stop = true;
    reader.join();
    writer.join();
    ASSERT_TRUE(moved) << "redis-cli --cluster reshard failed";
    EXPECT_GT(entries_on(c(), 1), on_node1) << "the reshard moved no entry";
    EXPECT_GT(reads.load(), 120);
    EXPECT_EQ(bad_reads.load(), 0) << first_error;
    EXPECT_EQ(bad_writes.load(), 0);
    // Nothing lost: every entry, old and new, from a fresh replica on the new map.
    auto fresh = cluster_tier(c().url(2));
    for (int i = 0; i < 60; ++i) EXPECT_TRUE(fresh->get(key_of(i)).ok()) << i;
    for (int i = 100; i < 100 + writes.load(); ++i) EXPECT_TRUE(fresh->get(key_of(i)).ok()) << i;
    // The accounts a migration put off are caught up by later writes: the counters hold every entry.
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(tier->put(key_of(5000 + i), value_of(i, 1000), false).ok());
    int64_t held = 0;
    for (int n = 0; n < 3; ++n) {
        int64_t b = 0;
        entries_on(c(), n, &b);
        held += b;
    }
    EXPECT_EQ(tier->usage().bytes, held);
}

TEST_F(RedisClusterTest, AKilledNodeCostsOnlyItsSlotsAndIsUsedAgainWhenBack) {
    const std::string url = c().url(0);
    auto store = SegmentStore::open({url});
    ASSERT_TRUE(store.ok());
    auto tier = cluster_tier(url);
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(tier->put(key_of(i), value_of(i), false).ok());
    const int64_t on_node1 = entries_on(c(), 1);
    ASSERT_GT(on_node1, 0);
    c().node(1).kill();
    const auto t0 = std::chrono::steady_clock::now();
    int hits = 0, failures = 0;
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 60; ++i) {
            auto got = tier->get(key_of(i));
            if (got.ok()) {
                ++hits;
            } else {
                ++failures;
                EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().to_string();
            }
        }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(hits, 3 * (60 - on_node1));
    EXPECT_EQ(failures, 3 * on_node1);
    EXPECT_LT(s, 2.0) << "a dead node must fail fast";
    EXPECT_FALSE(tier->usage().up);
    // Back (empty, no persistence): its keys are written again and read, without a restart of ours.
    ASSERT_TRUE(c().node(1).start());
    ASSERT_TRUE(c().wait_ok());
    ASSERT_TRUE(eventually([&] {
        for (int i = 0; i < 60; ++i) {
            if (!tier->put(key_of(i), value_of(i), false).ok()) return false;
        }
        return true;
    }));
    for (int i = 0; i < 60; ++i) EXPECT_TRUE(tier->get(key_of(i)).ok()) << i;
    EXPECT_TRUE(tier->usage().up);
}

TEST_F(RedisClusterTest, AHungNodeCostsOneDeadlinePerBackoffAndOnlyForItsSlots) {
    TierOptions o;
    o.read_timeout_ms = 150;
    auto tier = cluster_tier(c().url(0), o);
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(tier->put(key_of(i), value_of(i), false).ok());
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(tier->get(key_of(i)).ok());  // read connections open
    const int64_t on_node1 = entries_on(c(), 1);
    c().node(1).pause();
    const auto t0 = std::chrono::steady_clock::now();
    int hits = 0;
    for (int i = 0; i < 60; ++i) hits += tier->get(key_of(i)).ok() ? 1 : 0;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    c().node(1).resume();
    EXPECT_EQ(hits, 60 - on_node1);
    EXPECT_LT(s, 0.15 * 3 + 0.5) << "more than one deadline for one hung node";
    EXPECT_TRUE(eventually([&] {
        for (int i = 0; i < 60; ++i) {
            if (!tier->get(key_of(i)).ok()) return false;
        }
        return true;
    }));
}

// Issue 61 #3: a node that came back with another identity (its nodes.conf lost) is listed by
// the others as ["", 0, id]. That port 0 made the whole map refused, and with every node in the
// URL the empty newcomer was taken for a node of another cluster: every document computed, the
// healthy masters' too, with the tier up. Now its slots are a gap: the rest is served, the gap
// shows (unserved slots, /health "degraded").
TEST_F(RedisClusterTest, ANodeBackWithAnotherIdentityCostsOnlyItsOwnSlots) {
    const std::string all =
        "redis://" + c().node(0).address() + "," + c().node(1).address() + "," + c().node(2).address();
    {
        auto writer = cluster_tier(all);
        for (int i = 0; i < 60; ++i) ASSERT_TRUE(writer->put(key_of(i), value_of(i), false).ok()) << i;
    }
    const int64_t on_node2 = entries_on(c(), 2);
    ASSERT_GT(on_node2, 0);
    ASSERT_TRUE(c().reborn(2));
    ASSERT_TRUE(eventually([&] { return c().cli(0, "CLUSTER NODES").find("noaddr") != std::string::npos; }))
        << c().cli(0, "CLUSTER NODES");
    for (const std::string& url : {all, c().url(0)}) {
        auto owned = cluster_tier(url);
        RedisTier* tier = owned.get();
        std::vector<std::unique_ptr<StoreTier>> tiers;
        tiers.push_back(std::move(owned));
        SegmentStore store(std::move(tiers));
        int hits = 0, gaps = 0;
        for (int i = 0; i < 60; ++i) {
            auto got = tier->get(key_of(i));
            if (got.ok()) {
                ++hits;
            } else {
                ++gaps;
                EXPECT_NE(got.status().message().find("served by no node"), std::string::npos)
                    << url << ": " << got.status().to_string();
            }
        }
        EXPECT_EQ(hits, 60 - on_node2) << url;
        EXPECT_EQ(gaps, on_node2) << url;
        const TierUsage u = tier->usage();
        EXPECT_TRUE(u.up) << url;
        EXPECT_GT(u.unserved_slots, kNumSlots / 4) << url;
        EXPECT_LT(u.unserved_slots, kNumSlots / 2) << url;
        EXPECT_STREQ(store_health(store.stats()), "degraded") << url;
    }
}

TEST_F(RedisClusterTest, TheCapHoldsAcrossTheClusterAndAcrossWriters) {
    TierOptions o;
    o.max_bytes = int64_t(kClusterBuckets) * 100000;  // 100 kB a bucket: 5 entries of 20 kB
    auto a = cluster_tier(c().url(0), o);
    auto b = cluster_tier(c().url(2), o);
    for (int i = 0; i < 800; ++i) {
        auto put = (i % 2 == 0 ? a : b)->put(key_of(i), value_of(i, 20000), false);
        ASSERT_TRUE(put.ok()) << i << ": " << put.status().to_string();
    }
    int64_t held = 0, entries = 0;
    for (int n = 0; n < 3; ++n) {
        int64_t bytes = 0;
        const int64_t here = entries_on(c(), n, &bytes);
        EXPECT_GT(here, 0) << "node " << n;
        EXPECT_LT(here, 800 / 3) << "node " << n << " evicted nothing";
        held += bytes;
        entries += here;
    }
    EXPECT_LE(held, o.max_bytes);
    EXPECT_GE(held, o.max_bytes / 2);
    EXPECT_EQ(a->usage().evictions + b->usage().evictions, 800 - entries);
    EXPECT_EQ(a->usage().account_errors + b->usage().account_errors, 0);
    // The most recently written entries are the ones kept.
    int recent = 0;
    for (int i = 780; i < 800; ++i) recent += a->contains(key_of(i)).ok() && *a->contains(key_of(i)) ? 1 : 0;
    EXPECT_EQ(recent, 20);
}

TEST_F(RedisClusterTest, ANodeOfAnotherClusterOrAStandaloneInTheUrlIsAClearError) {
    RedisCluster other(1, false);  // a one-node cluster of its own
    ASSERT_TRUE(other.ok());
    ASSERT_EQ(other.cli(0, "CLUSTER ADDSLOTSRANGE 0 16383"), "OK");
    RedisServer standalone;
    ASSERT_TRUE(standalone.running());
    for (const std::string& stranger : {other.node(0).address(), standalone.address()}) {
        const std::string url = "redis://" + c().node(0).address() + "," + stranger;
        const auto t0 = std::chrono::steady_clock::now();
        auto tier = cluster_tier(url);
        for (int i = 0; i < 20; ++i) {
            auto got = tier->get(key_of(i));
            ASSERT_FALSE(got.ok());
            EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << got.status().to_string();
            EXPECT_NE(got.status().message().find(stranger), std::string::npos) << got.status().to_string();
            EXPECT_FALSE(tier->put(key_of(i), value_of(i), false).ok());
        }
        EXPECT_FALSE(tier->usage().up) << "a misconfigured tier showed as up";
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
    }
}

TEST_F(RedisClusterTest, ClusterDownAndSlotMapGapsAreCountedErrorsNeverHangs) {
    RedisCluster half(1, false);
    ASSERT_TRUE(half.ok());
    // Full coverage required and half the slots served: the node answers CLUSTERDOWN to every key.
    ASSERT_EQ(half.cli(0, "CONFIG SET cluster-require-full-coverage yes"), "OK");
    ASSERT_EQ(half.cli(0, "CLUSTER ADDSLOTSRANGE 0 8191"), "OK");  // slots 8192.. served by nobody
    std::vector<std::unique_ptr<StoreTier>> tiers;
    tiers.push_back(cluster_tier(half.url()));
    SegmentStore store(std::move(tiers));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 30; ++i) EXPECT_FALSE(store.contains(key_of(i)));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
    const StoreStats st = store.stats();
    EXPECT_EQ(st.tiers[0].errors, 30);
    EXPECT_EQ(st.tiers[0].outages, 1) << "one warning for the whole outage";
    auto tier = cluster_tier(half.url());
    int down = 0;
    for (int i = 0; i < 30; ++i) {
        auto got = tier->get(key_of(i));
        ASSERT_FALSE(got.ok());
        down += got.status().message().find("CLUSTERDOWN") != std::string::npos ? 1 : 0;
    }
    EXPECT_GT(down, 5);
    // Coverage no longer required: the served half works, the gap is an error naming it.
    ASSERT_EQ(half.cli(0, "CONFIG SET cluster-require-full-coverage no"), "OK");
    ASSERT_TRUE(eventually([&] { return half.cli(0, "CLUSTER INFO").find("cluster_state:ok") != std::string::npos; }));
    int ok = 0, gaps = 0;
    for (int i = 0; i < 60; ++i) {
        auto put = tier->put(key_of(i), value_of(i), false);
        if (put.ok()) {
            ++ok;
            EXPECT_TRUE(tier->get(key_of(i)).ok());
        } else {
            ++gaps;
            EXPECT_NE(put.status().message().find("served by no node"), std::string::npos) << put.status().to_string();
            EXPECT_FALSE(tier->get(key_of(i)).ok());
        }
    }
    EXPECT_GT(ok, 10);
    EXPECT_GT(gaps, 10);
}

}  // namespace
}  // namespace lazyattn::store
