// PinLedger: which pool blocks pinned documents hold, counted overall and per account (the
// quota's owner: engine::tenant_account), and how many
// blocks each pinned document holds. Only the inference thread writes it (pins run there), but
// any thread reads it: submit() checks a request against the unpinned part of the pool before
// queueing it. So every member takes the ledger's own lock, and version() tells the scheduler
// when queued requests must be checked again.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace lazyattn::engine {

class PinLedger {
public:
    explicit PinLedger(int32_t num_blocks) : pins_per_block_(num_blocks, 0) {}

    // Blocks among `blocks` that no document pins yet: what pinning them would add.
    int32_t num_new(std::span<const kv::BlockId> blocks) const;
    // A document's first pin and its last unpin; `document` names it (the end of its chain).
    void add(const std::string& tenant, const kv::BlockHash& document, std::span<const kv::BlockId> blocks);
    void remove(const std::string& tenant, const kv::BlockHash& document, std::span<const kv::BlockId> blocks);

    int32_t num_pinned() const;                           // distinct blocks pinned
    int32_t num_pinned(const std::string& tenant) const;  // distinct blocks this tenant pins
    // Blocks the document ending in `document` pins; 0 when it is not pinned.
    int32_t document_blocks(const kv::BlockHash& document) const;
    uint64_t version() const;  // changes with every add and remove

private:
    mutable std::mutex mu_;
    std::vector<int32_t> pins_per_block_;
    int32_t num_pinned_ = 0;
    std::map<std::string, std::unordered_map<kv::BlockId, int32_t>> tenant_blocks_;
    std::unordered_map<kv::BlockHash, int32_t, kv::BlockHashHasher> documents_;
    uint64_t version_ = 0;
};

}  // namespace lazyattn::engine
