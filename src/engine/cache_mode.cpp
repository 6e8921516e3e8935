#include "engine/cache_mode.h"

#include <string>

namespace lazyattn::engine {

Expected<CacheMode> parse_cache_mode(std::string_view name) {
    if (name == "lazy") return CacheMode::kLazy;
    if (name == "lazy-k") return CacheMode::kLazyK;
    if (name == "block-attn") return CacheMode::kBlockAttn;
    if (name == "prefix") return CacheMode::kPrefix;
    if (name == "none") return CacheMode::kNone;
    return invalid_argument("unknown cache mode '" + std::string(name) +
                            "' (expected lazy, lazy-k, block-attn, prefix or none)");
}

const char* cache_mode_name(CacheMode mode) {
    switch (mode) {
        case CacheMode::kLazy:
            return "lazy";
        case CacheMode::kLazyK:
            return "lazy-k";
        case CacheMode::kBlockAttn:
            return "block-attn";
        case CacheMode::kPrefix:
            return "prefix";
        case CacheMode::kNone:
            return "none";
    }
    return "?";
}

const char* kv_dtype_name(kernels::KvDtype dtype) {
    switch (dtype) {
        case kernels::KvDtype::kF32:
            return "f32";
        case kernels::KvDtype::kF16:
            return "f16";
        case kernels::KvDtype::kBF16:
            return "bf16";
    }
    return "?";
}

}  // namespace lazyattn::engine
