#include "kv/block_pool.h"

#include "core/check.h"

namespace lazyattn::kv {

BlockPool::BlockPool(int32_t num_blocks) : ref_counts_(num_blocks, 0), free_pos_(num_blocks) {
    for (BlockId id = 0; id < num_blocks; ++id) free_pos_[id] = free_list_.insert(free_list_.end(), id);
}

Expected<std::vector<BlockId>> BlockPool::allocate(int32_t n) {
    if (n < 0) return invalid_argument("negative block count");
    if (n > num_free()) {
        return resource_exhausted("KV cache: need " + std::to_string(n) + " blocks, " + std::to_string(num_free()) +
                                  " of " + std::to_string(num_blocks()) + " free");
    }
    std::vector<BlockId> ids;
    ids.reserve(n);
    for (int32_t i = 0; i < n; ++i) {
        const BlockId id = free_list_.front();
        if (on_reuse_) on_reuse_(id);
        free_list_.pop_front();
        ref_counts_[id] = 1;
        ids.push_back(id);
    }
    return ids;
}

void BlockPool::ref(BlockId id) {
    LA_CHECK(id >= 0 && id < num_blocks());
    if (ref_counts_[id]++ == 0) free_list_.erase(free_pos_[id]);
}

void BlockPool::unref(BlockId id) {
    LA_CHECK(id >= 0 && id < num_blocks());
    LA_CHECK_MSG(ref_counts_[id] > 0, "unref of free block %d", id);
    if (--ref_counts_[id] == 0) free_pos_[id] = free_list_.insert(free_list_.end(), id);
}

void BlockPool::unref_all(const std::vector<BlockId>& ids) {
    for (BlockId id : ids) unref(id);
}

void BlockPool::check_integrity() const {
    std::vector<bool> on_list(ref_counts_.size(), false);
    for (BlockId id : free_list_) {
        LA_CHECK_MSG(id >= 0 && id < num_blocks(), "free list holds bad id %d", id);
        LA_CHECK_MSG(!on_list[id], "block %d twice on the free list", id);
        on_list[id] = true;
        LA_CHECK_MSG(ref_counts_[id] == 0, "block %d on the free list with %d references", id, ref_counts_[id]);
    }
    for (BlockId id = 0; id < num_blocks(); ++id) {
        LA_CHECK_MSG(ref_counts_[id] >= 0, "block %d has negative references", id);
        LA_CHECK_MSG(ref_counts_[id] > 0 || on_list[id], "free block %d missing from the free list", id);
    }
}

}  // namespace lazyattn::kv
