// What a client can make a tier do, and what a faulty tier can do to the engine: each tier's size
// cap evicts the least recently used entries (disk, and a real Redis shared by two writers), a
// FIFO planted at an entry's path is refused instead of blocking the reader, and a Redis that
// accepts connections but never answers costs one read deadline and is then marked down.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "core/mapped_file.h"
#include "redis_server.h"
#include "store/disk_tier.h"
#include "store/redis_tier.h"
#include "store_test_util.h"

namespace lazyattn::store {
namespace {

using namespace testing;

std::string key_of(int i) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%032x", i + 0x1000);
    return buf;
}

// Runs `f` on its own thread; false if it has not returned within `timeout_s` (the thread is
// then left behind, blocked: the test fails instead of hanging).
template <typename F>
bool returns_within(double timeout_s, F f) {
    auto done = std::make_shared<std::promise<void>>();
    auto fut = done->get_future();
    std::thread([done, f]() mutable {
        f();
        done->set_value();
    }).detach();
    return fut.wait_for(std::chrono::duration<double>(timeout_s)) == std::future_status::ready;
}

// Writes 30 entries of 1000 bytes under a 10000-byte cap, reading entry 0 between writes (so it
// stays the most recently used), and checks the tier's account.
template <typename Tier>
void expect_lru_eviction(Tier& tier) {
    const std::vector<uint8_t> entry(1000, 5);
    for (int i = 0; i < 30; ++i) {
        ASSERT_TRUE(tier.put(key_of(i), entry, false).ok()) << i;
        if (i > 0) {
            ASSERT_TRUE(tier.get(key_of(0)).ok()) << "the hot entry was evicted after write " << i;
        }
    }
    const TierUsage u = tier.usage();
    EXPECT_EQ(u.max_bytes, 10000);
    EXPECT_LE(u.bytes, 10000);
    EXPECT_GE(u.bytes, 8000);  // evicted down to 90%, not emptied
    EXPECT_GE(u.evictions, 20);
    EXPECT_TRUE(*tier.contains(key_of(0)));   // used before every write: kept
    EXPECT_TRUE(*tier.contains(key_of(29)));  // the newest: kept
    EXPECT_FALSE(*tier.contains(key_of(1)));  // the oldest untouched: gone
    int present = 0;
    for (int i = 0; i < 30; ++i) present += *tier.contains(key_of(i)) ? 1 : 0;
    EXPECT_EQ(present * 1000, u.bytes);
}

TEST(TierLimits, DiskTierEvictsTheLeastRecentlyUsedPastItsCap) {
    TempDir dir;
    TierOptions o;
    o.max_bytes = 10000;
    auto tier = DiskTier::open(dir.path, o);
    ASSERT_TRUE(tier.ok()) << tier.status().to_string();
    expect_lru_eviction(**tier);
    // A tier opened again on the directory (a restart, another replica) counts what is there.
    auto again = DiskTier::open(dir.path, o);
    EXPECT_EQ((*again)->usage().bytes, (*tier)->usage().bytes);
}

TEST(TierLimits, DiskTierWithoutACapKeepsEverything) {
    TempDir dir;
    TierOptions o;
    o.max_bytes = 0;
    auto tier = DiskTier::open(dir.path, o);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE((*tier)->put(key_of(i), std::vector<uint8_t>(1000, 1), false).ok());
    EXPECT_EQ((*tier)->usage().bytes, 20000);
    EXPECT_EQ((*tier)->usage().evictions, 0);
}

TEST(TierLimits, AFifoAtAnEntrysPathIsRefusedNotWaitedOn) {
    TempDir dir;
    const std::string fifo = dir.path + "/planted";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    Status mapped;
    ASSERT_TRUE(returns_within(5, [&] { mapped = MappedFile::open(fifo).status(); }))
        << "MappedFile::open blocked on a FIFO";
    EXPECT_FALSE(mapped.ok());

    auto tier = DiskTier::open(dir.path);
    ASSERT_TRUE(tier.ok());
    const std::string key = key_of(7);
    std::filesystem::create_directories(std::filesystem::path((*tier)->path_of(key)).parent_path());
    ASSERT_EQ(mkfifo((*tier)->path_of(key).c_str(), 0600), 0);
    Status got;
    ASSERT_TRUE(returns_within(5, [&] { got = (*tier)->get(key).status(); })) << "DiskTier::get blocked on a FIFO";
    EXPECT_FALSE(got.ok());
}

TEST(TierLimits, RedisTierEvictsTheLeastRecentlyUsedAcrossWriters) {
    RedisServer server;
    ASSERT_TRUE(server.running()) << "redis-server did not start (scripts/install_deps.sh installs it)";
    TierOptions o;
    o.max_bytes = 10000;
    auto tier = open_tier(server.url(), o);
    ASSERT_TRUE(tier.ok()) << tier.status().to_string();
    expect_lru_eviction(**tier);
    // A second writer (another replica) shares the one account kept in Redis.
    auto other = open_tier(server.url(), o);
    ASSERT_TRUE((*other)->put(key_of(100), std::vector<uint8_t>(1000, 9), false).ok());
    EXPECT_LE((*other)->usage().bytes, 10000);
    EXPECT_GE((*other)->usage().bytes, 8000);
    EXPECT_TRUE(*(*tier)->contains(key_of(100)));
}

TEST(TierLimits, ARedisThatNeverAnswersCostsOneDeadlineThenIsDown) {
    SilentRedis hung;
    TierOptions o;
    o.read_timeout_ms = 200;
    auto tier = open_tier(hung.url(), o);
    ASSERT_TRUE(tier.ok()) << tier.status().to_string();
    EXPECT_TRUE((*tier)->usage().up);
    // Without a read deadline this call would wait forever (the test would time out).
    auto first = (*tier)->get(key_of(1));
    EXPECT_EQ(first.status().code(), StatusCode::kUnavailable) << first.status().to_string();
    EXPECT_FALSE((*tier)->usage().up);
    // Marked down: the next lookups fail at once without touching the socket.
    for (int i = 0; i < 20; ++i) {
        auto again = (*tier)->get(key_of(2 + i));
        EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
        EXPECT_NE(again.status().message().find("is down"), std::string::npos) << again.status().to_string();
    }
}

}  // namespace
}  // namespace lazyattn::store
