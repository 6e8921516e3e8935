// RedisTier and SegmentStore over a real redis-server started by the test: round trips, SET NX
// semantics, the server down at start and killed mid-run (calls fail fast, errors counted,
// reconnect once it is back), two writers of one segment, and disk + Redis in order (a Redis hit
// is copied up to disk).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "redis_server.h"
#include "store/disk_tier.h"
#include "store/redis_tier.h"
#include "store/segment_store.h"
#include "store_test_util.h"

namespace lazyattn::store {
namespace {

using namespace testing;

const Fingerprint kModel{3, 4};

// Retries `f` until it returns true or 15 s pass (the tier retries its connection once a second).
template <typename F>
bool eventually(F f) {
    for (int i = 0; i < 300; ++i) {
        if (f()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

TEST(RedisUrl, ParsesAndRefuses) {
    auto a = parse_redis_url("redis://localhost:6380/2");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->host, "localhost");
    EXPECT_EQ(a->port, 6380);
    EXPECT_EQ(a->db, 2);
    EXPECT_EQ(parse_redis_url("redis://h").value().port, 6379);
    for (const char* bad :
         {"redis://", "redis://:1", "redis://h:x", "redis://h:70000", "redis://h:1/x", "http://h:1"}) {
        EXPECT_EQ(parse_redis_url(bad).status().code(), StatusCode::kInvalidArgument) << bad;
    }
}

TEST(RedisUrl, PasswordsParseAndNeverShow) {
    auto a = parse_redis_url("redis://:s%40cret@db.internal:6390/1");
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_EQ(a->user, "");
    EXPECT_EQ(a->password, "s@cret");
    EXPECT_EQ(a->host, "db.internal");
    EXPECT_EQ(a->port, 6390);
    auto b = parse_redis_url("redis://app:pw@h");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->user, "app");
    EXPECT_EQ(b->password, "pw");
    EXPECT_EQ(redact_redis_url("redis://app:pw@h:1/2"), "redis://app:***@h:1/2");
    EXPECT_EQ(redact_redis_url("redis://h:1"), "redis://h:1");
    for (const char* bad : {"redis://pw@h", "redis://:@h", "redis://:p%4@h", "redis://:p%zz@h", "redis://:pw@h:x"}) {
        auto r = parse_redis_url(bad);
        EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
        EXPECT_EQ(r.status().message().find(":pw@"), std::string::npos) << r.status().to_string();
    }
    auto unknown = open_tier("rediss://:topsecret@h:1");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.status().message().find("topsecret"), std::string::npos) << unknown.status().to_string();
}

// A server with requirepass: the right password works, a wrong one fails cleanly (counted as an
// unreachable tier, never a crash), and the password shows nowhere.
TEST(RedisTier, PasswordProtectedServer) {
    RedisServer server(0, "hunter2");
    ASSERT_TRUE(server.running()) << "redis-server did not start (scripts/install_deps.sh installs it)";
    const std::string host = "127.0.0.1:" + std::to_string(server.port());
    auto good = open_tier("redis://:hunter2@" + host);
    ASSERT_TRUE(good.ok()) << good.status().to_string();
    EXPECT_EQ((*good)->where().find("hunter2"), std::string::npos) << (*good)->where();
    const std::string key = "00112233445566778899aabbccddeeff";
    const std::vector<uint8_t> bytes(1000, 7);
    auto put = (*good)->put(key, bytes, false);
    ASSERT_TRUE(put.ok()) << put.status().to_string();
    EXPECT_TRUE(*put);
    EXPECT_EQ((*good)->get(key).value().bytes.size(), bytes.size());

    for (const std::string& url : {"redis://:opensesame@" + host, "redis://" + host}) {
        auto bad = open_tier(url);
        ASSERT_TRUE(bad.ok());
        auto got = (*bad)->get(key);  // AUTH refused, or NOAUTH on the GET: a failing tier, not a miss
        ASSERT_FALSE(got.ok()) << url;
        EXPECT_NE(got.status().code(), StatusCode::kNotFound) << url << ": " << got.status().to_string();
        EXPECT_EQ(got.status().message().find("opensesame"), std::string::npos) << got.status().to_string();
    }
}

TEST(RedisTier, PutGetContainsNx) {
    RedisServer server;
    ASSERT_TRUE(server.running()) << "redis-server did not start (scripts/install_deps.sh installs it)";
    auto tier = open_tier(server.url() + "/3");
    ASSERT_TRUE(tier.ok()) << tier.status().to_string();
    const std::string key = "0123456789abcdef0123456789abcdef";
    EXPECT_EQ((*tier)->get(key).status().code(), StatusCode::kNotFound);
    EXPECT_FALSE(*(*tier)->contains(key));
    const std::vector<uint8_t> a(100000, 1), b(10, 2);
    EXPECT_TRUE(*(*tier)->put(key, a, false));
    EXPECT_FALSE(*(*tier)->put(key, b, false));  // NX: the first stays
    auto got = (*tier)->get(key);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(std::vector<uint8_t>(got->bytes.begin(), got->bytes.end()), a);
    EXPECT_TRUE(*(*tier)->put(key, b, true));
    EXPECT_EQ((*tier)->get(key)->bytes.size(), b.size());
    // Database 3 is not database 0.
    auto db0 = open_tier(server.url());
    EXPECT_FALSE(*(*db0)->contains(key));
}

TEST(RedisTier, DownAtStartThenUpKilledMidRunThenBack) {
    RedisServer server;
    ASSERT_TRUE(server.running());
    server.kill();
    backend::HostKvMemory a(small_shape()), b(small_shape());
    fill_random(a, 1);
    const SegmentMeta m = segment_meta(kModel, segment_variant(true, ""), a.shape(), tokens(32));
    const std::vector<kv::BlockId> src = {0, 1}, dst = {4, 5};
    auto store = SegmentStore::open({server.url()});
    ASSERT_TRUE(store.ok()) << "a server that is down is not an error at start";
    // Down: lookups miss at once (serving computes), writes fail, both counted.
    EXPECT_EQ((*store)->load(m, b, dst, 0), -1);
    (*store)->write_async(m, a, src);
    (*store)->flush();
    StoreStats st = (*store)->stats();
    EXPECT_GE(st.tiers[0].errors, 2);
    EXPECT_EQ(st.tiers[0].writes, 0);
    // Up: the tier reconnects by itself.
    ASSERT_TRUE(server.start());
    ASSERT_TRUE(eventually([&] {
        (*store)->write_async(m, a, src);
        (*store)->flush();
        return (*store)->stats().tiers[0].writes == 1;
    }));
    EXPECT_EQ((*store)->load(m, b, dst, 0), 0);
    EXPECT_EQ(block_bytes(b, dst), block_bytes(a, src));
    // Killed mid-run: misses, counted errors, no crash; back again: served again.
    const int64_t errors = (*store)->stats().tiers[0].errors;
    server.kill();
    EXPECT_EQ((*store)->load(m, b, dst, 0), -1);
    EXPECT_GT((*store)->stats().tiers[0].errors, errors);
    ASSERT_TRUE(server.start());  // an empty server (no persistence)
    ASSERT_TRUE(eventually([&] {
        (*store)->write_async(m, a, src);
        (*store)->flush();
        return (*store)->load(m, b, dst, 0) == 0;
    }));
}

TEST(RedisTier, TwoWritersOfOneSegmentBothSucceed) {
    RedisServer server;
    ASSERT_TRUE(server.running());
    backend::HostKvMemory a(small_shape()), b(small_shape());
    fill_random(a, 1);
    fill_random(b, 2);
    const SegmentMeta m = segment_meta(kModel, segment_variant(true, ""), a.shape(),
                                       tokens(112));  // whole blocks (no padding rows to differ)
    // The same segment computed by two replicas: identical KV in different blocks.
    const std::vector<kv::BlockId> in_a = {0, 1, 2, 3, 4, 5, 6}, in_b = {7, 6, 5, 4, 3, 2, 1};
    const auto entry = encode(m, a, in_a);
    EXPECT_TRUE(import_segment_blocks(b, in_b, *verify_segment(entry, m)).ok());
    auto s1 = SegmentStore::open({server.url()});
    auto s2 = SegmentStore::open({server.url()});
    for (int round = 0; round < 5; ++round) {
        (*s1)->write_async(m, a, in_a);
        (*s2)->write_async(m, b, in_b);
    }
    (*s1)->flush();
    (*s2)->flush();
    const StoreStats x = (*s1)->stats(), y = (*s2)->stats();
    EXPECT_EQ(x.tiers[0].errors + y.tiers[0].errors, 0);
    EXPECT_EQ(x.tiers[0].writes + y.tiers[0].writes, 1);  // SET NX: exactly one stored
    EXPECT_EQ(x.tiers[0].writes_skipped + y.tiers[0].writes_skipped, 9);
    backend::HostKvMemory c(small_shape());
    EXPECT_EQ((*s1)->load(m, c, in_a, 0), 0);
    EXPECT_EQ(block_bytes(c, in_a), block_bytes(a, in_a));
}

TEST(RedisTier, DiskThenRedisCopiesRedisHitsUpToDisk) {
    RedisServer server;
    ASSERT_TRUE(server.running());
    TempDir dir;
    backend::HostKvMemory a(small_shape()), b(small_shape());
    fill_random(a, 1);
    const SegmentMeta m = segment_meta(kModel, segment_variant(true, ""), a.shape(), tokens(48));
    {  // another replica wrote it to Redis only
        auto only_redis = SegmentStore::open({server.url()});
        (*only_redis)->write_async(m, a, std::vector<kv::BlockId>{0, 1, 2});
    }
    auto store = SegmentStore::open({dir.path, server.url()});
    ASSERT_TRUE(store.ok());
    EXPECT_EQ((*store)->load(m, b, std::vector<kv::BlockId>{3, 4, 5}, 0), 1);
    (*store)->flush();
    auto disk = DiskTier::open(dir.path);
    EXPECT_TRUE(*(*disk)->contains(segment_key(m)));
    EXPECT_EQ((*store)->load(m, b, std::vector<kv::BlockId>{3, 4, 5}, 0), 0);  // now from disk
    const StoreStats st = (*store)->stats();
    EXPECT_EQ(st.tiers[0].hits, 1);
    EXPECT_EQ(st.tiers[1].hits, 1);
    EXPECT_EQ(st.tiers[0].writes, 1);
}

}  // namespace
}  // namespace lazyattn::store
