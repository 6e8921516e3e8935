// KvMemory: the KV pool's memory, owned by the backend that computes on it (host memory for the
// CPU and reference backends, device memory for a GPU one). The engine keeps only bookkeeping
// (kv::BlockPool, kv::BlockCache, hashes, kv::KvShape) and hands this object back to the backend
// for every operation on the pool: store, block-attn's copy and re-rotation, attention.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/large_buffer.h"
#include "core/status.h"
#include "kernels/params/attention_params.h"
#include "kv/kv_shape.h"

namespace lazyattn::backend {

// Bytes as whole MiB, rounded up: how a pool that cannot be had is described to the user, on
// every backend alike ("the KV pool of N blocks needs X MiB but ...").
inline std::string mib(int64_t bytes) { return std::to_string((bytes + (int64_t(1) << 20) - 1) >> 20) + " MiB"; }
inline std::string kv_pool_needs(const kv::KvShape& shape) {
    return "the KV pool of " + std::to_string(shape.num_blocks) + " blocks needs " +
           mib(shape.bytes_per_block() * shape.num_blocks);
}

class KvMemory {
public:
    explicit KvMemory(const kv::KvShape& shape) : shape_(shape) {}
    virtual ~KvMemory() = default;
    KvMemory(const KvMemory&) = delete;
    KvMemory& operator=(const KvMemory&) = delete;

    const kv::KvShape& shape() const { return shape_; }
    // Layer arrays ([num_blocks, num_kv_heads, block_size, head_dim] of shape().k_dtype / v_dtype)
    // in the backend's memory: what AttentionParams::k_cache / v_cache point at.
    virtual void* k(int32_t layer) = 0;
    virtual void* v(int32_t layer) = 0;
    const void* k(int32_t layer) const { return const_cast<KvMemory*>(this)->k(layer); }
    const void* v(int32_t layer) const { return const_cast<KvMemory*>(this)->v(layer); }
    // One block of every layer to or from host memory: shape().bytes_per_block() bytes laid out
    // [layer][K (k_bytes_per_block), V (v_bytes_per_block)] (the unit a persistent store moves). The block must not
    // be written by a step in flight (callers hold a reference on it). A device error (a lost
    // GPU) is returned, and the caller treats the block as unreadable: the store recomputes it.
    [[nodiscard]] virtual Status read_block(int32_t block, void* host) const = 0;
    [[nodiscard]] virtual Status write_block(int32_t block, const void* host) = 0;

protected:
    kv::KvShape shape_;
};

// The pool in host memory (CPU and reference backends): k()/v() are host pointers.
class HostKvMemory final : public KvMemory {
public:
    // Throws std::bad_alloc when the memory cannot be had; allocate() is the checked form.
    explicit HostKvMemory(const kv::KvShape& shape);
    // The pool's memory, or kResourceExhausted naming the size when it cannot be had (larger
    // than the machine's physical memory, or refused by the allocator): a pool that would only
    // fit in swap or overcommit is refused up front rather than killing the process later.
    static Expected<std::unique_ptr<HostKvMemory>> allocate(const kv::KvShape& shape);

    void* k(int32_t layer) override { return k_[layer].data(); }
    void* v(int32_t layer) override { return v_[layer].data(); }
    using KvMemory::k;
    using KvMemory::v;
    Status read_block(int32_t block, void* host) const override;
    Status write_block(int32_t block, const void* host) override;

private:
    std::vector<LargeBuffer> k_, v_;
};

// Block-attn's materialization of one span for one layer: tokens [0, num_tokens) of the block
// list src_blocks are copied to dst_blocks (disjoint from src_blocks), the keys re-rotated by
// `delta` positions with `rope` (R(delta) R(b + i) k = R(b + delta + i) k; mscale 1), the
// values bit for bit. Block lists hold ceil(num_tokens / block_size) entries (host memory).
struct KvCopyRotateParams {
    const int32_t* src_blocks;
    const int32_t* dst_blocks;
    int32_t num_tokens;
    int32_t delta;
    kernels::RopeParams rope;
};

}  // namespace lazyattn::backend
