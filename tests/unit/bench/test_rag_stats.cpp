// The RAG benchmark's statistics: bootstrap intervals of percentiles on data whose answer is
// known, compulsory misses on a hand-made stream, the steady-state window, and KV budgets sized
// from the model's KV bytes per token.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bench/kv_budget.h"
#include "bench/rag_runner.h"
#include "bench/rag_stats.h"

namespace lazyattn::bench {
namespace {

TEST(BootstrapCi, ConstantDataHasAPointInterval) {
    const Interval ci = bootstrap_percentile_ci(std::vector<double>(50, 7.5), 50);
    EXPECT_EQ(ci.low, 7.5);
    EXPECT_EQ(ci.high, 7.5);
    const Interval none = bootstrap_percentile_ci({}, 50);
    EXPECT_EQ(none.low, 0.0);
    EXPECT_EQ(none.high, 0.0);
}

TEST(BootstrapCi, MedianOfOneToOneHundredOne) {
    std::vector<double> v;
    for (int i = 1; i <= 101; ++i) v.push_back(i);
    const Interval ci = bootstrap_percentile_ci(v, 50);
    // The sample median's standard error here is about 1.25 * 29.2 / sqrt(101) = 3.6, so the 95%
    // interval spans roughly 51 -+ 7.
    EXPECT_LT(ci.low, 51);
    EXPECT_GT(ci.high, 51);
    EXPECT_GT(ci.high - ci.low, 8);
    EXPECT_LT(ci.high - ci.low, 24);
    EXPECT_NEAR((ci.low + ci.high) / 2, 51, 3);
    // Seeded: the same interval twice; a narrower level gives a nested interval.
    const Interval again = bootstrap_percentile_ci(v, 50);
    EXPECT_EQ(again.low, ci.low);
    EXPECT_EQ(again.high, ci.high);
    const Interval half = bootstrap_percentile_ci(v, 50, 0.5);
    EXPECT_GE(half.low, ci.low);
    EXPECT_LE(half.high, ci.high);
    EXPECT_LT(half.high - half.low, ci.high - ci.low);
}

TEST(BootstrapCi, CoversTheTrueMedianAboutNinetyFivePercentOfTheTime) {
    // Exponential(1): the true median is ln 2. 200 samples of 100 values each.
    std::mt19937_64 rng(42);
    std::exponential_distribution<double> draw(1.0);
    const double truth = std::log(2.0);
    int covered = 0;
    const int trials = 200;
    for (int t = 0; t < trials; ++t) {
        std::vector<double> v(100);
        for (double& x : v) x = draw(rng);
        const Interval ci = bootstrap_percentile_ci(v, 50, 0.95, 500, uint64_t(t) + 1);
        if (ci.low <= truth && truth <= ci.high) ++covered;
    }
    EXPECT_GE(covered, int(0.88 * trials));
    EXPECT_LE(covered, int(0.995 * trials));
}

TEST(CompulsoryMisses, HandMadeStream) {
    const std::vector<std::vector<int32_t>> docs = {{0, 1}, {1, 2}, {0, 3}, {2, 3}, {4, 4}};
    const CompulsoryMisses all = count_compulsory_misses(docs, 0);
    EXPECT_EQ(all.lookups, 10);
    EXPECT_EQ(all.compulsory, 5);  // 0, 1, 2, 3, 4 (4 twice in one request: one first touch)
    EXPECT_DOUBLE_EQ(all.fraction(), 0.5);
    // Measured from request 2: the warm-up saw 0, 1, 2; 3 and 4 are first touches.
    const CompulsoryMisses warm = count_compulsory_misses(docs, 2);
    EXPECT_EQ(warm.lookups, 6);
    EXPECT_EQ(warm.compulsory, 2);
    const CompulsoryMisses none = count_compulsory_misses(docs, 5);
    EXPECT_EQ(none.lookups, 0);
    EXPECT_EQ(none.fraction(), 0.0);
}

TEST(SteadyThroughput, CountsCompletionsAfterTheWarmUp) {
    const std::vector<double> done = {4, 0.5, 6, 1, 5};  // completion order need not be sorted
    EXPECT_DOUBLE_EQ(measured_span_s(done, 0), 6.0);
    EXPECT_DOUBLE_EQ(steady_throughput(done, 0), 5.0 / 6.0);
    EXPECT_DOUBLE_EQ(measured_span_s(done, 0, 0.25), 5.75);
    // After 2 completions (at 0.5 and 1): 3 more in the 5 s up to 6.
    EXPECT_DOUBLE_EQ(measured_span_s(done, 2), 5.0);
    EXPECT_DOUBLE_EQ(steady_throughput(done, 2), 0.6);
    EXPECT_EQ(steady_throughput(done, 5), 0.0);       // nothing left to measure
    EXPECT_EQ(steady_throughput({3, 3, 3}, 1), 0.0);  // no time passed
}

kv::KvShape smollm2_f16() {  // SmolLM2-135M: 30 layers, 3 KV heads of 64, f16, 16-token blocks
    kv::KvShape s;
    s.num_layers = 30;
    s.num_kv_heads = 3;
    s.head_dim = 64;
    s.block_size = 16;
    s.set_types(kernels::same_kv_types(kernels::KvDtype::kF16));
    return s;
}

TEST(KvBudget, DocumentsFromKvBytesPerToken) {
    // K and V x 30 layers x 3 heads x 64 x 2 bytes = 23040 bytes per token, 368640 per block.
    auto b = kv_budget_for_docs(smollm2_f16(), 40.0 / 3.0, 512);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(b->bytes_per_token(), 23040);
    EXPECT_EQ(b->blocks_per_doc, 32);
    EXPECT_EQ(b->num_blocks, 427);  // ceil(13.33 x 32)
    EXPECT_NEAR(b->mib(), 427 * 368640.0 / 1048576.0, 1e-9);
    EXPECT_NEAR(b->docs(), 427.0 / 32.0, 1e-12);
    auto ten = kv_budget_for_docs(smollm2_f16(), 10, 512);
    ASSERT_TRUE(ten.ok());
    EXPECT_EQ(ten->num_blocks, 320);
    EXPECT_DOUBLE_EQ(ten->mib(), 112.5);
    // A partial last block counts whole: 500 tokens still take 32 blocks.
    EXPECT_EQ(kv_budget_for_docs(smollm2_f16(), 1, 500)->num_blocks, 32);
    // f32 KV: twice the bytes, the same blocks per document.
    kv::KvShape f32 = smollm2_f16();
    f32.set_types(kernels::same_kv_types(kernels::KvDtype::kF32));
    EXPECT_EQ(kv_budget_for_docs(f32, 10, 512)->bytes_per_token(), 46080);
    EXPECT_DOUBLE_EQ(kv_budget_for_docs(f32, 10, 512)->mib(), 225.0);
}

TEST(KvBudget, MibRoundsDownToWholeBlocks) {
    // The 160 MiB pool: 455 blocks, 14.2 documents of 512 tokens.
    auto b = kv_budget_for_mib(smollm2_f16(), 160, 512);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->num_blocks, 455);
    EXPECT_NEAR(b->docs(), 14.22, 0.01);
    EXPECT_NE(b->describe().find("455 blocks"), std::string::npos);
}

TEST(KvBudget, RefusesNonsense) {
    EXPECT_FALSE(kv_budget_for_docs(smollm2_f16(), 0, 512).ok());
    EXPECT_FALSE(kv_budget_for_docs(smollm2_f16(), -3, 512).ok());
    EXPECT_FALSE(kv_budget_for_docs(smollm2_f16(), std::nan(""), 512).ok());
    EXPECT_FALSE(kv_budget_for_docs(smollm2_f16(), 1e12, 512).ok());  // beyond 32-bit block ids
    EXPECT_FALSE(kv_budget_for_docs(smollm2_f16(), 1, 0).ok());
    EXPECT_FALSE(kv_budget_for_mib(smollm2_f16(), 0.1, 512).ok());  // less than one block
    EXPECT_FALSE(kv_budget_for_mib(smollm2_f16(), -1, 512).ok());
    kv::KvShape empty;
    EXPECT_FALSE(kv_budget_for_docs(empty, 1, 512).ok());
}

}  // namespace
}  // namespace lazyattn::bench
