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
