// The store's writer thread: its queue is bounded in bytes (a slow tier drops writes instead of
// holding KV copies; an entry larger than the bound is refused before it is copied), and at
// shutdown it drains for a short while, then aborts the write in flight (a Redis that never
// answers, a tier that never returns) and drops the rest, counted.
#include <gtest/gtest.h>

#include <optional>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "redis_server.h"
#include "store/redis_tier.h"
#include "store/segment_store.h"
#include "store_test_util.h"

namespace lazyattn::store {
namespace {

using namespace testing;

const Fingerprint kModel{5, 6};

// A tier whose put() blocks until released (or aborted): a tier slower than the engine.
class GatedTier final : public StoreTier {
public:
    std::string name() const override { return "gated"; }
    std::string where() const override { return "memory"; }
    Expected<Blob> get(const std::string&) override { return not_found("nothing here"); }
    Expected<bool> contains(const std::string&) override { return false; }
    Expected<bool> put(const std::string&, std::span<const uint8_t>, bool) override {
        std::unique_lock<std::mutex> lock(mu_);
        ++entered_;
        cv_.notify_all();
        cv_.wait(lock, [this] { return open_ || aborted_; });
        if (aborted_) return unavailable("aborted");
        ++stored_;
        return true;
    }
    TierUsage usage() const override { return {}; }
    void abort_writes() override {
        std::lock_guard<std::mutex> lock(mu_);
        aborted_ = true;
        cv_.notify_all();
    }
    void open() {
        std::lock_guard<std::mutex> lock(mu_);
        open_ = true;
        cv_.notify_all();
    }
    void wait_entered(int n) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return entered_ >= n; });
    }
    int stored() const {
        std::lock_guard<std::mutex> lock(mu_);
        return stored_;
    }

private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false, aborted_ = false;
    int entered_ = 0, stored_ = 0;
};

// A pool that counts the blocks read out of it (an export).
class CountingKvMemory final : public backend::KvMemory {
public:
    explicit CountingKvMemory(backend::HostKvMemory& real) : KvMemory(real.shape()), real_(real) {}
    void* k(int32_t layer) override { return real_.k(layer); }
    void* v(int32_t layer) override { return real_.v(layer); }
    using KvMemory::k;
    using KvMemory::v;
    Status read_block(int32_t block, void* host) const override {
        ++reads;
        return real_.read_block(block, host);
    }
    Status write_block(int32_t block, const void* host) override { return real_.write_block(block, host); }
    mutable int reads = 0;

private:
    backend::HostKvMemory& real_;
};

SegmentMeta meta_of(const backend::HostKvMemory& kv, int i, int32_t num_tokens = 64) {
    return segment_meta(kModel, 1, kv.shape(), tokens(num_tokens, 1000 * (i + 1)));
}

struct GatedStore {
    GatedTier* tier = nullptr;
    std::unique_ptr<SegmentStore> store;
};

GatedStore gated_store(const WriterOptions& o) {
    auto tier = std::make_unique<GatedTier>();
    GatedStore g;
    g.tier = tier.get();
    std::vector<std::unique_ptr<StoreTier>> tiers;
    tiers.push_back(std::move(tier));
    g.store = std::make_unique<SegmentStore>(std::move(tiers), o);
    return g;
}

const std::vector<kv::BlockId> kBlocks = {0, 1, 2, 3};

TEST(StoreWriter, TheQueueIsBoundedInBytesBehindASlowTier) {
    backend::HostKvMemory a(small_shape());
    const int64_t entry = int64_t(segment_total_bytes(meta_of(a, 0)));
    WriterOptions o;
    o.max_pending_bytes = entry * 3 + entry / 2;  // three entries, the one being written included
    GatedStore g = gated_store(o);
    int accepted = 0;
    for (int i = 0; i < 10; ++i) {
        accepted += g.store->write_async(meta_of(a, i), a, kBlocks) ? 1 : 0;
        EXPECT_LE(g.store->stats().bytes_pending, o.max_pending_bytes);
    }
    EXPECT_EQ(accepted, 3);
    StoreStats st = g.store->stats();
    EXPECT_EQ(st.writes_dropped, 7);
    EXPECT_EQ(st.bytes_pending, 3 * entry);
    // Room again once the tier takes them.
    g.tier->open();
    g.store->flush();
    EXPECT_EQ(g.store->stats().bytes_pending, 0);
    EXPECT_TRUE(g.store->write_async(meta_of(a, 20), a, kBlocks));
    g.store->flush();
    EXPECT_EQ(g.tier->stored(), 4);
}

TEST(StoreWriter, AnEntryLargerThanTheBoundIsDroppedBeforeItIsCopied) {
    backend::HostKvMemory a(small_shape());
    CountingKvMemory counting(a);
    WriterOptions o;
    o.max_pending_bytes = int64_t(segment_total_bytes(meta_of(a, 0, 64))) - 1;
    GatedStore g = gated_store(o);
    g.tier->open();
    EXPECT_FALSE(g.store->write_async(meta_of(a, 0, 64), counting, kBlocks));
    EXPECT_EQ(counting.reads, 0) << "the blocks were exported for a write that was dropped";
    EXPECT_EQ(g.store->stats().writes_dropped, 1);
    // A smaller one fits.
    EXPECT_TRUE(g.store->write_async(meta_of(a, 1, 16), counting, std::vector<kv::BlockId>{0}));
    g.store->flush();
    EXPECT_EQ(g.tier->stored(), 1);
}

TEST(StoreWriter, UnboundedKeepsEveryWrite) {  // precompute's setting: it flushes each batch
    backend::HostKvMemory a(small_shape());
    WriterOptions o;
    o.max_pending_bytes = 0;
    GatedStore g = gated_store(o);
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(g.store->write_async(meta_of(a, i), a, kBlocks));
    g.tier->open();
    g.store->flush();
    EXPECT_EQ(g.tier->stored(), 100);
    EXPECT_EQ(g.store->stats().writes_dropped, 0);
}

double seconds_of(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(StoreWriter, CloseDrainsBrieflyThenAbortsAndCountsWhatIsLeft) {
    backend::HostKvMemory a(small_shape());
    WriterOptions o;
    o.shutdown_drain_s = 0.3;
    GatedStore g = gated_store(o);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(g.store->write_async(meta_of(a, i), a, kBlocks));
    g.tier->wait_entered(1);
    const double s = seconds_of([&] { g.store->close(); });
    EXPECT_GE(s, 0.25);
    EXPECT_LT(s, 2.0);
    const StoreStats st = g.store->stats();
    EXPECT_EQ(st.writes_dropped, 5);  // four queued, the one in flight aborted
    EXPECT_EQ(st.writes_pending, 0);
    EXPECT_EQ(st.bytes_pending, 0);
    EXPECT_EQ(st.tiers[0].errors, 0) << "an abort at shutdown is a drop, not the tier's error";
    EXPECT_FALSE(g.store->write_async(meta_of(a, 9), a, kBlocks));  // closed
}

TEST(StoreWriter, CloseWaitsForWritesThatFinishInTime) {
    TempDir dir;
    backend::HostKvMemory a(small_shape());
    auto store = SegmentStore::open({dir.path});
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 20; ++i) ASSERT_TRUE((*store)->write_async(meta_of(a, i), a, kBlocks));
    (*store)->close();
    EXPECT_EQ((*store)->stats().tiers[0].writes, 20);
    EXPECT_EQ((*store)->stats().writes_dropped, 0);
}

// A Redis that accepts and never answers: each stalled write would block its 5 s write timeout,
// so a store destroyed with writes queued held shutdown for seconds per write.
TEST(StoreWriter, AHungRedisDoesNotHoldShutdown) {
    SilentRedis hung;
    backend::HostKvMemory a(small_shape());
    // A Redis that hangs after start-up: the tier made without SegmentStore::open's start-up
    // lookup (which would find it not answering and mark it down, so writes fail at once).
    auto tier = open_tier(hung.url());
    ASSERT_TRUE(tier.ok());
    std::vector<std::unique_ptr<StoreTier>> tiers;
    tiers.push_back(std::move(*tier));
    std::optional<SegmentStore> store(std::in_place, std::move(tiers));
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(store->write_async(meta_of(a, i), a, kBlocks));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the first write is stalled
    const double s = seconds_of([&] { store->close(); });
    EXPECT_LT(s, 3.0) << "close() waited on the hung Redis";
    const StoreStats st = store->stats();
    EXPECT_EQ(st.writes_dropped, 6);
    EXPECT_EQ(st.writes_pending, 0);
    const double destroy = seconds_of([&] { store.reset(); });
    EXPECT_LT(destroy, 0.5);
}

// A put blocked sending an entry larger than the socket buffers to a Redis that never reads is
// cut by abort_writes() from another thread: it fails at once (no SIGPIPE ends the process), and
// so does every later put.
TEST(StoreWriter, AbortWritesCutsABlockedRedisPut) {
    SilentRedis hung;
    auto tier = open_tier(hung.url());
    ASSERT_TRUE(tier.ok());
    const std::vector<uint8_t> big(64 << 20, 7);
    auto result =
        std::async(std::launch::async, [&] { return (*tier)->put("0123456789abcdef0123456789abcdef", big, false); });
    ASSERT_EQ(result.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout) << "the put did not block";
    (*tier)->abort_writes();
    ASSERT_EQ(result.wait_for(std::chrono::seconds(2)), std::future_status::ready) << "the put was not interrupted";
    EXPECT_EQ(result.get().status().code(), StatusCode::kUnavailable);
    const double s = seconds_of([&] {
        auto again = (*tier)->put("0123456789abcdef0123456789abcdee", std::vector<uint8_t>(10, 1), false);
        EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
    });
    EXPECT_LT(s, 0.1);
}

}  // namespace
}  // namespace lazyattn::store
