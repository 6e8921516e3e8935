// BlockPool: the KV cache's physical blocks, reference-counted, in one pool. A block with
// references belongs to live sequences; a block without is free. Free blocks may still hold a
// cached segment's contents (see SegmentCache) and are reused least-recently-freed first.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <vector>

#include "core/status.h"

namespace lazyattn::kv {

using BlockId = int32_t;

class BlockPool {
public:
    explicit BlockPool(int32_t num_blocks);

    int32_t num_blocks() const { return int32_t(ref_counts_.size()); }
    int32_t num_free() const { return int32_t(free_list_.size()); }
    int32_t num_used() const { return num_blocks() - num_free(); }
    int32_t ref_count(BlockId id) const { return ref_counts_.at(id); }

    // Called with each block allocate() is about to hand out, before it does (so a cache can
    // forget what the block held).
    void set_reuse_listener(std::function<void(BlockId)> listener) { on_reuse_ = std::move(listener); }

    // Takes `n` blocks from the front of the free list (the least recently freed), each with one
    // reference. All or nothing: kResourceExhausted leaves the pool unchanged.
    Expected<std::vector<BlockId>> allocate(int32_t n);
    // Adds a reference to a block; a free block is taken off the free list (a cache hit).
    void ref(BlockId id);
    // Drops a reference; at zero the block goes to the back of the free list.
    void unref(BlockId id);
    void unref_all(const std::vector<BlockId>& ids);

    // The block allocate() would hand out next, or -1 when none is free (so a cache can forget
    // what that block held before it is overwritten).
    BlockId next_victim() const { return free_list_.empty() ? -1 : free_list_.front(); }

    // Aborts with a message if reference counts and the free list disagree.
    void check_integrity() const;

private:
    std::vector<int32_t> ref_counts_;
    std::list<BlockId> free_list_;                        // front = least recently freed
    std::vector<std::list<BlockId>::iterator> free_pos_;  // valid when ref_counts_[id] == 0
    std::function<void(BlockId)> on_reuse_;
};

}  // namespace lazyattn::kv
