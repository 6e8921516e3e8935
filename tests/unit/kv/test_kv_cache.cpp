// KvCache: released chains free their last block first (so eviction keeps a document's head),
// and keyed, salted chain seeds.
#include <gtest/gtest.h>

#include <numeric>

#include "kv/block_hash.h"
#include "kv/kv_cache.h"

namespace lazyattn::kv {
namespace {

KvShape tiny_shape(int32_t num_blocks) {
    KvShape s;
    s.num_layers = 1;
    s.num_blocks = num_blocks;
    s.num_kv_heads = 1;
    s.block_size = 4;
    s.head_dim = 4;
    return s;
}

TEST(KvCache, ReleasedChainsAreEvictedFromTheirEnd) {
    KvCache cache(tiny_shape(6));
    const BlockHash seed = hash_seed("segment", "model", 1);
    std::vector<int32_t> tokens(16);
    std::iota(tokens.begin(), tokens.end(), 100);
    const auto blocks = *cache.allocate(4);
    cache.publish(seed, tokens, blocks, true);
    cache.release(blocks);
    // Three new blocks: the two never used, then one cached block, the chain's last.
    ASSERT_TRUE(cache.allocate(3).ok());
    const auto hits = cache.match(seed, tokens, 16);
    EXPECT_EQ(hits, std::vector<BlockId>(blocks.begin(), blocks.begin() + 3));
    EXPECT_FALSE(cache.contains(seed, tokens));
    cache.check_integrity();
}

// match_partial: after the whole blocks match() shares, the cached block (whole, or a tail's last,
// partly filled one) that starts with the most of the next tokens, bounded by max_tokens, with a
// reference on it; none when no block under that parent starts with the next token. Forgetting a
// block (the pool reusing it) takes it out of the look-up.
TEST(KvCache, MatchPartialFindsTheLongestCachedStartOfTheNextBlock) {
    KvCache cache(tiny_shape(6));
    const BlockHash seed = hash_seed("tail", "model", 1);
    const std::vector<int32_t> cached = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // blocks [1..4] [5..8] [9 10]
    const auto blocks = *cache.allocate(3);
    cache.publish(seed, cached, blocks, true);
    cache.release(blocks);

    const std::vector<int32_t> longer = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const auto whole = cache.match(seed, longer, 11);
    ASSERT_EQ(whole, std::vector<BlockId>(blocks.begin(), blocks.begin() + 2));
    const auto hit = cache.match_partial(seed, longer, whole.size(), 11);
    EXPECT_EQ(hit.block, blocks[2]);
    EXPECT_EQ(hit.num_tokens, 2);
    EXPECT_EQ(cache.pool().ref_count(blocks[2]), 1);
    // max_tokens stops it short: only the first row of the block is within it.
    const auto bounded = cache.match_partial(seed, longer, whole.size(), 9);
    EXPECT_EQ(bounded.num_tokens, 1);
    // A full block shared in part: [5, 6, 99 ...] starts like [5..8].
    const std::vector<int32_t> branch = {1, 2, 3, 4, 5, 6, 99, 98};
    const auto part = cache.match_partial(seed, branch, 1, 7);
    EXPECT_EQ(part.block, blocks[1]);
    EXPECT_EQ(part.num_tokens, 2);
    // Nothing under another parent, nor a block that does not start with the next token.
    EXPECT_EQ(cache.match_partial(seed, std::vector<int32_t>{7, 8}, 0, 1).num_tokens, 0);
    EXPECT_EQ(cache.match_partial(hash_seed("tail", "model", 2), cached, 0, 9).num_tokens, 0);
    cache.release({blocks[2], blocks[2], blocks[1]});  // the three partial hits' references
    cache.release(whole);
    cache.check_integrity();

    // Blocks handed out again are forgotten: the partial look-up no longer finds them.
    ASSERT_TRUE(cache.allocate(6).ok());
    EXPECT_EQ(cache.match_partial(seed, longer, 0, 11).num_tokens, 0);
    cache.check_integrity();
}

TEST(BlockHash, SeedsAreKeyedAndSalted) {
    const BlockHash a = hash_seed("segment", "model", 1);
    EXPECT_EQ(a, hash_seed("segment", "model", 1));
    EXPECT_NE(a, hash_seed("segment", "model", 2));
    EXPECT_NE(hash_salt(a, ""), a);
    EXPECT_NE(hash_salt(a, "tenant-a"), hash_salt(a, "tenant-b"));
    EXPECT_NE(hash_salt(a, ""), hash_block(a, std::span<const int32_t>()));
}

}  // namespace
}  // namespace lazyattn::kv
