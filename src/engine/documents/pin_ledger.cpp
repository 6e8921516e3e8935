#include "engine/documents/pin_ledger.h"

#include <algorithm>

#include "core/check.h"

namespace lazyattn::engine {

int32_t PinLedger::num_new(std::span<const kv::BlockId> blocks) const {
    std::lock_guard<std::mutex> lock(mu_);
    int32_t n = 0;
    std::vector<kv::BlockId> seen;  // a document may repeat a block only if the caller made it so
    for (kv::BlockId b : blocks) {
        if (pins_per_block_[b] > 0 || std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
        seen.push_back(b);
        ++n;
    }
    return n;
}

void PinLedger::add(const std::string& tenant, const kv::BlockHash& document, std::span<const kv::BlockId> blocks) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& mine = tenant_blocks_[tenant];
    for (kv::BlockId b : blocks) {
        if (pins_per_block_[b]++ == 0) ++num_pinned_;
        ++mine[b];
    }
    documents_[document] = int32_t(blocks.size());
    ++version_;
}

void PinLedger::remove(const std::string& tenant, const kv::BlockHash& document, std::span<const kv::BlockId> blocks) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& mine = tenant_blocks_[tenant];
    for (kv::BlockId b : blocks) {
        LA_CHECK_MSG(pins_per_block_[b] > 0 && mine.count(b), "unpin of block %d that is not pinned", b);
        if (--pins_per_block_[b] == 0) --num_pinned_;
        if (--mine[b] == 0) mine.erase(b);
    }
    if (mine.empty()) tenant_blocks_.erase(tenant);
    documents_.erase(document);
    ++version_;
}

int32_t PinLedger::num_pinned() const {
    std::lock_guard<std::mutex> lock(mu_);
    return num_pinned_;
}

int32_t PinLedger::num_pinned(const std::string& tenant) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tenant_blocks_.find(tenant);
    return it == tenant_blocks_.end() ? 0 : int32_t(it->second.size());
}

int32_t PinLedger::document_blocks(const kv::BlockHash& document) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = documents_.find(document);
    return it == documents_.end() ? 0 : it->second;
}

uint64_t PinLedger::version() const {
    std::lock_guard<std::mutex> lock(mu_);
    return version_;
}

}  // namespace lazyattn::engine
