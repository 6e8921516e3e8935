// The Redis tier's size account against what Redis really holds: entries Redis evicts itself
// (maxmemory + allkeys-lru, as design.md recommends) or someone deletes are forgotten, not counted
// as evictions, and never make the tier empty itself; garbage in the bookkeeping keys is counted
// and repaired so the cap still holds. (Each test failed against the tier before the sizes table:
// the account drifted from what Redis held, ghost bytes emptied the tier, garbage turned the cap
// off.)
#include <gtest/gtest.h>

#include <cstdio>

#include "redis_client.h"
#include "redis_server.h"
#include "store/redis_tier.h"

namespace lazyattn::store {
namespace {

using namespace testing;

std::string key_of(int i) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%032x", i + 0x2000);
    return buf;
}

std::string redis_key_of(int i) { return "lazyattn:seg:" + key_of(i); }

TEST(RedisAccount, EntriesRedisEvictsItselfAreForgottenNotCountedAndNeverEmptyTheTier) {
    RedisServer server;
    ASSERT_TRUE(server.running()) << "redis-server did not start (scripts/install_deps.sh installs it)";
    RedisClient cli(server.port());
    ASSERT_TRUE(cli.ok());
    ASSERT_EQ(cli.run({"CONFIG", "SET", "maxmemory", "4mb"}), "OK");
    ASSERT_EQ(cli.run({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}), "OK");
    TierOptions o;
    o.max_bytes = 6 << 20;  // above what Redis keeps: only Redis evicts
    auto tier = open_tier(server.url(), o);
    ASSERT_TRUE(tier.ok()) << tier.status().to_string();
    const std::vector<uint8_t> entry(100 * 1000, 3);
    for (int i = 0; i < 80; ++i) {
        auto put = (*tier)->put(key_of(i), entry, false);
        ASSERT_TRUE(put.ok()) << i << ": " << put.status().to_string();
        if (i >= 30) {  // Redis is full from here on; the tier must never empty itself
            int64_t present = 0;
            cli.entry_bytes(&present);
            ASSERT_GE(present, 12) << "the tier emptied itself at write " << i;
        }
    }
    // Redis stops evicting; a few small writes let the tier sweep what it evicted last.
    ASSERT_EQ(cli.run({"CONFIG", "SET", "maxmemory", "0"}), "OK");
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*tier)->put(key_of(100 + i), std::vector<uint8_t>(1000, 1), false).ok());
    int64_t present = 0;
    const int64_t held = cli.entry_bytes(&present);
    const TierUsage u = (*tier)->usage();
    EXPECT_EQ(u.bytes, held) << present << " entries present";
    EXPECT_EQ(u.evictions, 0) << "entries Redis evicted counted as the tier's evictions";
    // (Redis's LRU clock ticks once a second, so within this test it evicts at random, now and
    // then a bookkeeping key: the account is then rebuilt, which is not an error.)
    EXPECT_GE(u.forgotten, 10);
    EXPECT_EQ(u.account_errors, 0);
    EXPECT_GE(present, 20);
}

TEST(RedisAccount, EntriesDeletedBehindItsBackAreForgottenByAReadOrTheNextWrite) {
    RedisServer server;
    ASSERT_TRUE(server.running());
    RedisClient cli(server.port());
    auto tier = open_tier(server.url());
    ASSERT_TRUE(tier.ok());
    const std::vector<uint8_t> entry(10000, 4);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(*(*tier)->put(key_of(i), entry, false));
    EXPECT_EQ((*tier)->usage().bytes, 100000);
    for (int i : {2, 5, 7}) ASSERT_EQ(cli.integer({"DEL", redis_key_of(i)}), 1);
    // A read of a gone entry misses and drops it from the account.
    EXPECT_EQ((*tier)->get(key_of(5)).status().code(), StatusCode::kNotFound);
    EXPECT_EQ((*tier)->usage().forgotten, 1);
    EXPECT_EQ(cli.run({"GET", "lazyattn:seg:bytes"}), "90000");
    // The next write sweeps the index and forgets the other two.
    ASSERT_TRUE(*(*tier)->put(key_of(10), entry, false));
    const TierUsage u = (*tier)->usage();
    EXPECT_EQ(u.forgotten, 3);
    EXPECT_EQ(u.bytes, 80000);
    EXPECT_EQ(u.bytes, cli.entry_bytes());
    EXPECT_EQ(u.evictions, 0);
    EXPECT_EQ(cli.integer({"ZCARD", "lazyattn:seg:index"}), 8);
    EXPECT_EQ(cli.integer({"HLEN", "lazyattn:seg:sizes"}), 8);
}

// Ghost bytes (entries gone but still counted) past 90% of the cap made every write evict
// everything down to the entry just written; forgotten first, they evict nothing.
TEST(RedisAccount, GhostBytesNeverMakeAWriteEmptyTheTier) {
    RedisServer server;
    ASSERT_TRUE(server.running());
    RedisClient cli(server.port());
    TierOptions o;
    o.max_bytes = 100000;
    auto tier = open_tier(server.url(), o);
    const std::vector<uint8_t> entry(10000, 4);
    for (int i = 0; i < 9; ++i) ASSERT_TRUE(*(*tier)->put(key_of(i), entry, false));
    for (int i = 0; i < 5; ++i) ASSERT_EQ(cli.integer({"DEL", redis_key_of(i)}), 1);  // 50000 ghost bytes
    for (int i = 9; i < 11; ++i) ASSERT_TRUE(*(*tier)->put(key_of(i), entry, false));
    int64_t present = 0;
    EXPECT_EQ(cli.entry_bytes(&present), 60000);
    EXPECT_EQ(present, 6);
    const TierUsage u = (*tier)->usage();
    EXPECT_EQ(u.bytes, 60000);
    EXPECT_EQ(u.evictions, 0);
    EXPECT_EQ(u.forgotten, 5);
}

// Garbage put in the bookkeeping by hand (or another program sharing the database): each kind
// is counted, logged, and the account rebuilt from the entries present, so the cap holds.
struct Garbage {
    const char* what;
    std::vector<std::vector<std::string>> commands;
    bool counted;  // an account error (the bookkeeping was unusable)
};

TEST(RedisAccount, GarbageInTheBookkeepingIsCountedAndRepairedAndTheCapHolds) {
    RedisServer server;
    ASSERT_TRUE(server.running());
    RedisClient cli(server.port());
    const std::vector<Garbage> cases = {
        {"a non-numeric byte counter", {{"SET", "lazyattn:seg:bytes", "lots"}}, true},
        {"a negative byte counter", {{"SET", "lazyattn:seg:bytes", "-50000000"}}, true},
        {"a byte counter too low", {{"SET", "lazyattn:seg:bytes", "0"}}, true},
        {"a byte counter of the wrong type",
         {{"DEL", "lazyattn:seg:bytes"}, {"RPUSH", "lazyattn:seg:bytes", "1"}},
         true},
        {"an index of the wrong type", {{"DEL", "lazyattn:seg:index"}, {"SET", "lazyattn:seg:index", "x"}}, true},
        {"a size table of the wrong type", {{"DEL", "lazyattn:seg:sizes"}, {"SET", "lazyattn:seg:sizes", "x"}}, true},
        {"a garbage size", {{"HSET", "lazyattn:seg:sizes", redis_key_of(1), "-7"}}, true},
        {"an entry of the wrong type", {{"DEL", redis_key_of(1)}, {"RPUSH", redis_key_of(1), "x"}}, false},
    };
    TierOptions o;
    o.max_bytes = 100000;
    const std::vector<uint8_t> entry(10000, 5);
    for (const Garbage& g : cases) {
        SCOPED_TRACE(g.what);
        ASSERT_EQ(cli.run({"FLUSHALL"}), "OK");
        {
            auto first = open_tier(server.url(), o);
            for (int i = 0; i < 8; ++i) ASSERT_TRUE(*(*first)->put(key_of(i), entry, false));
            ASSERT_EQ((*first)->usage().bytes, 80000);
        }
        for (const auto& c : g.commands) ASSERT_EQ(cli.run(c).rfind("(error)", 0), std::string::npos) << c[0];
        // A replica (or this one restarted) keeps writing.
        auto tier = open_tier(server.url(), o);
        for (int i = 8; i < 40; ++i) {
            auto put = (*tier)->put(key_of(i), entry, false);
            ASSERT_TRUE(put.ok()) << put.status().to_string();
        }
        int64_t present = 0;
        const int64_t held = cli.entry_bytes(&present);
        const TierUsage u = (*tier)->usage();
        EXPECT_LE(held, o.max_bytes) << present << " entries present";
        EXPECT_GE(held, 80000);  // evicted down to 90%, not emptied
        EXPECT_EQ(u.bytes, held);
        EXPECT_TRUE(u.up);
        if (g.counted) {
            EXPECT_GE(u.account_errors, 1);
        } else {
            EXPECT_EQ(u.account_errors, 0);
        }
        // The bookkeeping is whole again: one more write of a fresh tier (which checks the sum)
        // finds nothing to repair.
        auto check = open_tier(server.url(), o);
        ASSERT_TRUE(*(*check)->put(key_of(1000), entry, false));
        EXPECT_EQ((*check)->usage().account_errors, 0);
        EXPECT_EQ((*check)->usage().bytes, cli.entry_bytes());
    }
}

// An entry key holding another type is a corrupt entry: read as one (the store rejects it and
// its write-through replaces it), never an error of the tier.
TEST(RedisAccount, AnEntryOfTheWrongTypeReadsAsACorruptEntryAndIsReplaced) {
    RedisServer server;
    ASSERT_TRUE(server.running());
    RedisClient cli(server.port());
    auto tier = open_tier(server.url());
    ASSERT_EQ(cli.integer({"RPUSH", redis_key_of(3), "x"}), 1);
    auto got = (*tier)->get(key_of(3));
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_TRUE(got->bytes.empty());
    const std::vector<uint8_t> entry(1000, 6);
    EXPECT_TRUE(*(*tier)->put(key_of(3), entry, true));
    EXPECT_EQ((*tier)->get(key_of(3))->bytes.size(), entry.size());
}

// A tier that found nothing to adopt at start counts entries written before the index existed
// once a repair rebuilds the account (they are part of what the cap bounds).
TEST(RedisAccount, ARebuildAdoptsEntriesTheIndexNeverListed) {
    RedisServer server;
    ASSERT_TRUE(server.running());
    RedisClient cli(server.port());
    for (int i = 0; i < 5; ++i) ASSERT_EQ(cli.run({"SET", redis_key_of(i), std::string(10000, 'a')}), "OK");
    ASSERT_EQ(cli.run({"SET", "lazyattn:seg:bytes", "garbage"}), "OK");
    TierOptions o;
    o.max_bytes = 50000;
    auto tier = open_tier(server.url(), o);
    ASSERT_TRUE(*(*tier)->put(key_of(10), std::vector<uint8_t>(10000, 1), false));
    const TierUsage u = (*tier)->usage();
    EXPECT_EQ(u.account_errors, 1);
    EXPECT_EQ(u.evictions, 2);  // 60000 past the cap: the two oldest adopted ones, down to 45000
    EXPECT_EQ(u.bytes, 40000);
    EXPECT_EQ(cli.entry_bytes(), 40000);
}

}  // namespace
}  // namespace lazyattn::store
