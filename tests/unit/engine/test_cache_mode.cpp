// The cache-mode table (engine/cache_mode.h): every enumerator has one row, names round-trip
// through parse_cache_mode, and the derived lists read what the table says.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/request/cache_mode.h"

namespace lazyattn::engine {
namespace {

TEST(CacheModeTable, NamesRoundTrip) {
    std::set<std::string> names;
    std::set<CacheMode> modes;
    for (const CacheModeInfo& m : cache_modes()) {
        auto parsed = parse_cache_mode(m.name);
        ASSERT_TRUE(parsed.ok()) << m.name;
        EXPECT_EQ(*parsed, m.mode);
        EXPECT_STREQ(cache_mode_name(m.mode), m.name);
        EXPECT_EQ(&cache_mode_info(m.mode), &m);
        EXPECT_GT(std::string(m.description).size(), 0u);
        names.insert(m.name);
        modes.insert(m.mode);
    }
    EXPECT_EQ(names.size(), cache_modes().size());
    EXPECT_EQ(modes.size(), cache_modes().size());
    for (CacheMode m :
         {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn, CacheMode::kPrefix, CacheMode::kNone}) {
        EXPECT_EQ(modes.count(m), 1u);
    }
}

TEST(CacheModeTable, UnknownNameListsTheChoices) {
    auto bad = parse_cache_mode("lazzy");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().message(), "unknown cache mode 'lazzy' (expected lazy, lazy-k, block-attn, prefix or none)");
}

TEST(CacheModeTable, DerivedListsAndFlags) {
    EXPECT_EQ(cache_mode_choices(), "lazy | lazy-k | block-attn | prefix | none");
    EXPECT_EQ(cache_mode_names(), (std::vector<std::string>{"lazy", "lazy-k", "block-attn", "prefix", "none"}));
    EXPECT_EQ(cache_mode_names(/*segments_only=*/true), (std::vector<std::string>{"lazy", "lazy-k", "block-attn"}));
    EXPECT_TRUE(segments_are_blocks(CacheMode::kBlockAttn));
    EXPECT_FALSE(segments_are_blocks(CacheMode::kPrefix));
    EXPECT_FALSE(keys_stored_rotated(CacheMode::kLazyK));
    EXPECT_TRUE(keys_stored_rotated(CacheMode::kLazy));
}

}  // namespace
}  // namespace lazyattn::engine
