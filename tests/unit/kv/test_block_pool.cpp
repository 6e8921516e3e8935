#include "kv/block_pool.h"

#include <gtest/gtest.h>

namespace lazyattn::kv {
namespace {

TEST(BlockPool, AllocateIsAllOrNothing) {
    BlockPool pool(8);
    auto a = pool.allocate(5);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(pool.num_free(), 3);
    auto b = pool.allocate(4);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(pool.num_free(), 3);
    pool.check_integrity();
}

TEST(BlockPool, RefCountsAndLeastRecentlyFreedFirst) {
    BlockPool pool(4);
    auto ids = *pool.allocate(4);
    pool.ref(ids[1]);
    EXPECT_EQ(pool.ref_count(ids[1]), 2);
    pool.unref(ids[2]);
    pool.unref(ids[0]);
    pool.unref(ids[1]);  // still referenced once
    EXPECT_EQ(pool.num_free(), 2);
    EXPECT_EQ(pool.next_victim(), ids[2]);
    auto again = *pool.allocate(1);
    EXPECT_EQ(again[0], ids[2]);
    pool.ref(ids[0]);  // a free block taken back (a cache hit) leaves the free list
    EXPECT_EQ(pool.num_free(), 0);
    pool.check_integrity();
    pool.unref_all({ids[0], ids[1], ids[3], again[0]});
    EXPECT_EQ(pool.num_free(), 4);
    pool.check_integrity();
}

}  // namespace
}  // namespace lazyattn::kv
