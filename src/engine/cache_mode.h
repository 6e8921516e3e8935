// How an engine reuses KV across requests. lazy, lazy-k and block-attn compute the same function
// (block-diagonal segments, a tail that sees everything); prefix and none compute ordinary causal
// attention over the flattened prompt.
#pragma once

#include <string_view>

#include "core/status.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::engine {

enum class CacheMode {
    kLazy,       // segments cached rotated at local positions; the kernel rotates the query per span
    kLazyK,      // segments cached unrotated; the kernel rotates each key to its logical position
    kBlockAttn,  // segments cached as in lazy, copied per request and re-rotated (materialized)
    kPrefix,     // prefix caching over the flattened prompt (block hash chain from the start)
    kNone,       // recompute everything
};

Expected<CacheMode> parse_cache_mode(std::string_view name);
const char* cache_mode_name(CacheMode mode);

// The KV cache's element type by name: f32, f16 or bf16.
const char* kv_dtype_name(kernels::KvDtype dtype);

inline bool segments_are_blocks(CacheMode m) {
    return m == CacheMode::kLazy || m == CacheMode::kLazyK || m == CacheMode::kBlockAttn;
}
inline bool keys_stored_rotated(CacheMode m) { return m != CacheMode::kLazyK; }

}  // namespace lazyattn::engine
