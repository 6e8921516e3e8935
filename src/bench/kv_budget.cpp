#include "bench/kv_budget.h"

#include <cmath>
#include <cstdio>

namespace lazyattn::bench {
namespace {

Expected<KvBudget> base_budget(const kv::KvShape& shape, int32_t doc_tokens) {
    if (shape.block_size <= 0 || shape.bytes_per_block() <= 0) return invalid_argument("the KV shape is empty");
    if (doc_tokens <= 0) return invalid_argument("documents must have tokens");
    KvBudget b;
    b.bytes_per_block = shape.bytes_per_block();
    b.block_size = shape.block_size;
    b.blocks_per_doc = (doc_tokens + shape.block_size - 1) / shape.block_size;
    return b;
}

// The pool's block ids are 32-bit.
Status check_blocks(double blocks) {
    if (!(blocks >= 1)) return invalid_argument("the KV budget holds less than one block");
    if (blocks > double(INT32_MAX)) return out_of_range("the KV budget exceeds the pool's block ids");
    return {};
}

}  // namespace

std::string KvBudget::describe() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.1f documents (%d blocks, %.1f MiB, %lld B/token)", docs(), num_blocks, mib(),
                  (long long)bytes_per_token());
    return buf;
}

Expected<KvBudget> kv_budget_for_docs(const kv::KvShape& shape, double docs, int32_t doc_tokens) {
    if (!(docs > 0)) return invalid_argument("the KV budget in documents must be positive");
    LA_ASSIGN_OR_RETURN(KvBudget b, base_budget(shape, doc_tokens));
    const double blocks = std::ceil(docs * double(b.blocks_per_doc) - 1e-9);
    LA_RETURN_IF_ERROR(check_blocks(blocks));
    b.num_blocks = int32_t(blocks);
    return b;
}

Expected<KvBudget> kv_budget_for_mib(const kv::KvShape& shape, double mib, int32_t doc_tokens) {
    if (!(mib > 0)) return invalid_argument("the KV budget in MiB must be positive");
    LA_ASSIGN_OR_RETURN(KvBudget b, base_budget(shape, doc_tokens));
    const double blocks = std::floor(mib * double(1 << 20) / double(b.bytes_per_block));
    LA_RETURN_IF_ERROR(check_blocks(blocks));
    b.num_blocks = int32_t(blocks);
    return b;
}

}  // namespace lazyattn::bench
