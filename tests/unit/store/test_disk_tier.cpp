// DiskTier and SegmentStore over it: round trips, atomic replacement, a writer killed mid-write,
// a full disk (RLIMIT_FSIZE: the kernel refuses the write as a full disk would), corrupt and
// foreign entries rejected, counted and overwritten.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "store/disk_tier.h"
#include "store/segment_store.h"
#include "store_test_util.h"

namespace lazyattn::store {
namespace {

using namespace testing;
namespace fs = std::filesystem;

const Fingerprint kModel{1, 2};

std::vector<std::string> files_under(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (e.is_regular_file()) out.push_back(e.path().filename().string());
    }
    return out;
}

TEST(DiskTier, PutGetContainsAndOverwrite) {
    TempDir dir;
    auto tier = DiskTier::open(dir.path + "/nested/store");
    ASSERT_TRUE(tier.ok()) << tier.status().to_string();
    const std::string key = "0123456789abcdef0123456789abcdef";
    EXPECT_EQ((*tier)->get(key).status().code(), StatusCode::kNotFound);
    EXPECT_FALSE(*(*tier)->contains(key));
    const std::vector<uint8_t> a(1000, 1), b(500, 2);
    EXPECT_TRUE(*(*tier)->put(key, a, false));
    EXPECT_TRUE(*(*tier)->contains(key));
    EXPECT_FALSE(*(*tier)->put(key, b, false));  // present: kept
    auto got = (*tier)->get(key);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(std::vector<uint8_t>(got->bytes.begin(), got->bytes.end()), a);
    EXPECT_TRUE(*(*tier)->put(key, b, true));
    // The old mapping stays valid (rename replaced the name, not the bytes).
    EXPECT_EQ(std::vector<uint8_t>(got->bytes.begin(), got->bytes.end()), a);
    auto again = (*tier)->get(key);
    EXPECT_EQ(std::vector<uint8_t>(again->bytes.begin(), again->bytes.end()), b);
    EXPECT_EQ(files_under(dir.path), std::vector<std::string>{key + ".seg"});  // no temporaries
    EXPECT_EQ((*tier)->get("../../etc/passwd").status().code(), StatusCode::kInvalidArgument);
}

TEST(DiskTier, OpenRefusesAFileAsDirectory) {
    TempDir dir;
    std::ofstream(dir.path + "/file") << "x";
    EXPECT_EQ(DiskTier::open(dir.path + "/file").status().code(), StatusCode::kIoError);
    EXPECT_FALSE(open_tier("http://example.com").ok());
}

TEST(DiskTier, AWriterKilledMidWriteLeavesNoEntry) {
    TempDir dir;
    const std::string key = "aa23456789abcdef0123456789abcdef";
    const std::vector<uint8_t> big(size_t(64) << 20, 7);
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t pid = fork();
    if (pid == 0) {
        auto tier = DiskTier::open(dir.path);
        char c = 1;
        (void)!write(ready[1], &c, 1);
        for (;;) (void)(*tier)->put(key, big, true);  // rewritten until killed
    }
    char c;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    usleep(20 * 1000);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    // Whenever the kill landed: the entry is absent or whole, never partial.
    auto tier = DiskTier::open(dir.path);
    auto got = (*tier)->get(key);
    if (got.ok()) {
        EXPECT_EQ(got->bytes.size(), big.size());
    } else {
        EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
    }
}

TEST(DiskTier, AFullDiskFailsTheWriteCleanly) {
    TempDir dir;
    const std::string key = "bb23456789abcdef0123456789abcdef";
    const pid_t pid = fork();
    if (pid == 0) {
        // A file size limit makes write() fail with EFBIG past 64 KiB, as ENOSPC would on a full disk.
        signal(SIGXFSZ, SIG_IGN);
        rlimit lim{1 << 16, 1 << 16};
        setrlimit(RLIMIT_FSIZE, &lim);
        auto tier = DiskTier::open(dir.path);
        auto put = (*tier)->put(key, std::vector<uint8_t>(1 << 20, 3), false);
        const bool failed_cleanly = !put.ok() && put.status().code() == StatusCode::kIoError;
        auto small = (*tier)->put("cc23456789abcdef0123456789abcdef", std::vector<uint8_t>(100, 4), false);
        _exit(failed_cleanly && small.ok() && *small ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    // Only the small entry: no partial big entry, no temporary file.
    EXPECT_EQ(files_under(dir.path), std::vector<std::string>{"cc23456789abcdef0123456789abcdef.seg"});
}

TEST(SegmentStore, WritesThroughAndLoadsIntoAnotherPool) {
    TempDir dir;
    backend::HostKvMemory a(small_shape()), b(small_shape());
    fill_random(a, 1);
    fill_random(b, 2);
    const SegmentMeta m = segment_meta(kModel, segment_variant(true, ""), a.shape(), tokens(40));
    {
        auto store = SegmentStore::open({dir.path});
        ASSERT_TRUE(store.ok());
        EXPECT_TRUE((*store)->write_async(m, a, std::vector<kv::BlockId>{4, 2, 6}));
        (*store)->flush();
        EXPECT_TRUE((*store)->contains(segment_key(m)));
        const StoreStats st = (*store)->stats();
        EXPECT_EQ(st.tiers[0].writes, 1);
        EXPECT_EQ(st.tiers[0].bytes_written, int64_t(segment_total_bytes(m)));
    }
    auto store = SegmentStore::open({dir.path});
    EXPECT_EQ((*store)->load(m, b, std::vector<kv::BlockId>{0, 1, 3}, 0), 0);
    EXPECT_EQ(block_bytes(b, {0, 1}), block_bytes(a, {4, 2}));
    const StoreStats st = (*store)->stats();
    EXPECT_EQ(st.tiers[0].hits, 1);
    EXPECT_EQ(st.tiers[0].bytes_read, int64_t(segment_total_bytes(m)));
    SegmentMeta other = m;
    other.tokens[0] += 1;
    EXPECT_EQ((*store)->load(other, b, std::vector<kv::BlockId>{0, 1, 3}, 0), -1);
    EXPECT_EQ((*store)->stats().tiers[0].misses, 1);
}

TEST(SegmentStore, CorruptTruncatedAndForeignEntriesAreRejectedCountedAndReplaced) {
    TempDir dir;
    backend::HostKvMemory a(small_shape()), b(small_shape());
    fill_random(a, 1);
    const SegmentMeta m =
        segment_meta(kModel, segment_variant(true, ""), a.shape(), tokens(32));  // whole blocks: no padding to differ
    auto disk = DiskTier::open(dir.path);
    const std::string key = segment_key(m), path = (*disk)->path_of(key);
    const auto good = encode(m, a, {0, 1});
    SegmentMeta foreign_meta = m;
    foreign_meta.model = {9, 9};
    std::vector<uint8_t> foreign = encode(foreign_meta, a, {0, 1});
    std::vector<uint8_t> corrupt_bytes = good;
    corrupt_bytes[good.size() / 2] ^= 1;
    std::vector<uint8_t> truncated(good.begin(), good.begin() + good.size() / 3);

    auto store = SegmentStore::open({dir.path});
    int64_t rejected = 0;
    for (const std::vector<uint8_t>* bad : {&corrupt_bytes, &truncated, &foreign}) {
        ASSERT_TRUE(*(*disk)->put(key, *bad, true));
        fill_random(b, 3);
        const auto before = block_bytes(b, {2, 3});
        EXPECT_EQ((*store)->load(m, b, std::vector<kv::BlockId>{2, 3}, 0), -1);
        EXPECT_EQ(block_bytes(b, {2, 3}), before);  // nothing imported
        EXPECT_EQ((*store)->stats().tiers[0].rejected, ++rejected);
        // The write-through of the recomputed segment replaces the bad entry.
        (*store)->write_async(m, a, std::vector<kv::BlockId>{0, 1});
        (*store)->flush();
        EXPECT_EQ((*store)->load(m, b, std::vector<kv::BlockId>{2, 3}, 0), 0);
        EXPECT_EQ(block_bytes(b, {2, 3}), block_bytes(a, {0, 1}));
    }
}

TEST(SegmentStore, AFullQueueDropsWritesAndCountsThem) {
    TempDir dir;
    backend::HostKvMemory a(small_shape());
    WriterOptions o;
    o.max_pending_bytes = int64_t(segment_total_bytes(segment_meta(kModel, 1, a.shape(), tokens(64))));  // one entry
    auto store = SegmentStore::open({dir.path}, o);
    int accepted = 0;
    for (int i = 0; i < 50; ++i) {
        const SegmentMeta m = segment_meta(kModel, 1, a.shape(), tokens(64, 1000 * i));
        accepted += (*store)->write_async(m, a, std::vector<kv::BlockId>{0, 1, 2, 3});
    }
    (*store)->flush();
    const StoreStats st = (*store)->stats();
    EXPECT_EQ(st.tiers[0].writes, accepted);
    EXPECT_EQ(st.writes_dropped, 50 - accepted);
    EXPECT_EQ(st.writes_pending, 0);
}

// A pool whose memory fails to copy blocks (a GPU lost mid-serving, as CudaKvMemory reports it).
class FailingKvMemory final : public backend::KvMemory {
public:
    explicit FailingKvMemory(backend::HostKvMemory& real) : KvMemory(real.shape()), real_(real) {}
    void* k(int32_t layer) override { return real_.k(layer); }
    void* v(int32_t layer) override { return real_.v(layer); }
    using KvMemory::k;
    using KvMemory::v;
    Status read_block(int32_t, void*) const override { return internal_error("KV read failed: device lost"); }
    Status write_block(int32_t, const void*) override { return internal_error("KV write failed: device lost"); }

private:
    backend::HostKvMemory& real_;
};

TEST(SegmentStore, ADeviceErrorOnTheCopyIsAMissAndAnErrorNotACrash) {
    TempDir dir;
    backend::HostKvMemory a(small_shape()), b(small_shape());
    fill_random(a, 1);
    const SegmentMeta m = segment_meta(kModel, segment_variant(true, ""), a.shape(), tokens(32));
    auto store = SegmentStore::open({dir.path});
    ASSERT_TRUE(store.ok());
    // Exporting from a failing pool drops the write (counted), writes nothing.
    FailingKvMemory failing_a(a), failing_b(b);
    EXPECT_FALSE((*store)->write_async(m, failing_a, std::vector<kv::BlockId>{0, 1}));
    (*store)->flush();
    EXPECT_EQ((*store)->stats().writes_dropped, 1);
    EXPECT_FALSE((*store)->contains(segment_key(m)));
    // A good entry that the pool refuses to take: a miss and an error, so the caller recomputes.
    EXPECT_TRUE((*store)->write_async(m, a, std::vector<kv::BlockId>{0, 1}));
    (*store)->flush();
    EXPECT_EQ((*store)->load(m, failing_b, std::vector<kv::BlockId>{2, 3}, 0), -1);
    const StoreStats st = (*store)->stats();
    EXPECT_EQ(st.tiers[0].hits, 0);
    EXPECT_EQ(st.tiers[0].misses, 1);
    EXPECT_EQ(st.tiers[0].errors, 1);
    // The entry itself is good: a healthy pool loads it.
    EXPECT_EQ((*store)->load(m, b, std::vector<kv::BlockId>{2, 3}, 0), 0);
}

}  // namespace
}  // namespace lazyattn::store
