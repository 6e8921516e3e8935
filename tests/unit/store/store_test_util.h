// Helpers of the store tests: a fresh temporary directory, a random pool, an encoded segment.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "backend/kv_memory.h"
#include "store/segment_blocks.h"
#include "store/segment_format.h"

namespace lazyattn::store::testing {

struct TempDir {
    std::string path;
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "lazyattn-store-XXXXXX").string();
        path = mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

inline kv::KvShape small_shape(kv::KvDtype dtype = kv::KvDtype::kF16) {
    kv::KvShape s;
    s.num_layers = 2;
    s.num_blocks = 8;
    s.num_kv_heads = 2;
    s.block_size = 16;
    s.head_dim = 8;
    s.set_types(kernels::same_kv_types(dtype));
    return s;
}

inline void fill_random(backend::HostKvMemory& kv, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const kv::KvShape& s = kv.shape();
    for (int32_t l = 0; l < s.num_layers; ++l) {
        for (void* p : {kv.k(l), kv.v(l)}) {
            const int64_t bytes = s.num_blocks * (p == kv.k(l) ? s.k_bytes_per_block() : s.v_bytes_per_block());
            auto* b = static_cast<uint8_t*>(p);
            for (int64_t i = 0; i < bytes; ++i) b[i] = uint8_t(rng());
        }
    }
}

inline std::vector<int32_t> tokens(int32_t n, int32_t base = 100) {
    std::vector<int32_t> t(n);
    for (int32_t i = 0; i < n; ++i) t[i] = base + i * 7;
    return t;
}

inline std::vector<uint8_t> encode(const SegmentMeta& m, const backend::HostKvMemory& kv,
                                   const std::vector<kv::BlockId>& blocks) {
    auto bytes = begin_segment(m);
    EXPECT_TRUE(export_segment_blocks(kv, blocks, int32_t(m.tokens.size()), data_of(bytes, m)).ok());
    seal_segment(bytes);
    return bytes;
}

// Every block's bytes (K and V of every layer) of `blocks`, for comparing pools.
inline std::vector<uint8_t> block_bytes(const backend::HostKvMemory& kv, const std::vector<kv::BlockId>& blocks) {
    const kv::KvShape& s = kv.shape();
    std::vector<uint8_t> out;
    for (int32_t l = 0; l < s.num_layers; ++l) {
        for (const void* p : {kv.k(l), kv.v(l)}) {
            const int64_t bb = p == kv.k(l) ? s.k_bytes_per_block() : s.v_bytes_per_block();
            for (kv::BlockId b : blocks) {
                const auto* base = static_cast<const uint8_t*>(p) + b * bb;
                out.insert(out.end(), base, base + bb);
            }
        }
    }
    return out;
}

}  // namespace lazyattn::store::testing
