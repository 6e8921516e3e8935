// How an engine reuses KV across requests. lazy, lazy-k and block-attn compute the same function
// (block-diagonal segments, a tail that sees everything); prefix and none compute ordinary causal
// attention over the flattened prompt.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::engine {

// What each mode does is in its row of the table below (cache_modes()).
enum class CacheMode { kLazy, kLazyK, kBlockAttn, kPrefix, kNone };

// The table of cache modes: every list of modes (CLI choices and help, parsing, which modes
// cache segments, which store keys rotated) is read from it.
struct CacheModeInfo {
    CacheMode mode;
    const char* name;          // as on the command line and in reports
    const char* description;   // one line: what the mode caches and how the kernel reads it
    bool segments_are_blocks;  // caches each segment as its own blocks (else one flattened prompt)
    bool keys_stored_rotated;  // keys stored rotated (else raw: the kernel rotates each key)
};

// Every mode, in the order help texts and benchmarks list them.
std::span<const CacheModeInfo> cache_modes();
const CacheModeInfo& cache_mode_info(CacheMode mode);

Expected<CacheMode> parse_cache_mode(std::string_view name);
const char* cache_mode_name(CacheMode mode);
// Names in table order; with segments_only, only the modes that cache segments.
std::vector<std::string> cache_mode_names(bool segments_only = false);
// "lazy | lazy-k | block-attn | prefix | none": the choices as help texts show them.
std::string cache_mode_choices();

// The KV cache's element type by name: f32, f16 or bf16.

inline bool segments_are_blocks(CacheMode m) { return cache_mode_info(m).segments_are_blocks; }
inline bool keys_stored_rotated(CacheMode m) { return cache_mode_info(m).keys_stored_rotated; }

}  // namespace lazyattn::engine
