#include "engine/request/cache_mode.h"

#include <iterator>
#include <string>

namespace lazyattn::engine {

namespace {

constexpr CacheModeInfo kCacheModes[] = {
    {CacheMode::kLazy, "lazy", "segments cached rotated at local positions; the kernel rotates the query per span",
     true, true},
    {CacheMode::kLazyK, "lazy-k", "segments cached unrotated; the kernel rotates each key to its logical position",
     true, false},
    {CacheMode::kBlockAttn, "block-attn", "segments cached as in lazy, copied per request and re-rotated", true, true},
    {CacheMode::kPrefix, "prefix", "prefix caching over the flattened prompt (block hash chain from the start)", false,
     true},
    {CacheMode::kNone, "none", "recompute everything", false, true},
};

}  // namespace

std::span<const CacheModeInfo> cache_modes() { return kCacheModes; }

const CacheModeInfo& cache_mode_info(CacheMode mode) {
    for (const CacheModeInfo& m : kCacheModes) {
        if (m.mode == mode) return m;
    }
    return kCacheModes[0];  // unreachable: every enumerator has a row (tested)
}

Expected<CacheMode> parse_cache_mode(std::string_view name) {
    for (const CacheModeInfo& m : kCacheModes) {
        if (name == m.name) return m.mode;
    }
    // "(expected lazy, lazy-k, block-attn, prefix or none)"
    std::string expected;
    const size_t n = std::size(kCacheModes);
    for (size_t i = 0; i < n; ++i) {
        expected += i == 0 ? "" : i + 1 == n ? " or " : ", ";
        expected += kCacheModes[i].name;
    }
    return invalid_argument("unknown cache mode '" + std::string(name) + "' (expected " + expected + ")");
}

const char* cache_mode_name(CacheMode mode) { return cache_mode_info(mode).name; }

std::vector<std::string> cache_mode_names(bool segments_only) {
    std::vector<std::string> names;
    for (const CacheModeInfo& m : kCacheModes) {
        if (!segments_only || m.segments_are_blocks) names.emplace_back(m.name);
    }
    return names;
}

std::string cache_mode_choices() {
    std::string out;
    for (const CacheModeInfo& m : kCacheModes) out += (out.empty() ? "" : " | ") + std::string(m.name);
    return out;
}

}  // namespace lazyattn::engine
