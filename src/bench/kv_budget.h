// The KV budget of a RAG benchmark run, stated in documents' worth or in MiB: the whole pool the
// engine gets (cached documents and in-flight requests share it, as in a server). A document of
// D tokens needs ceil(D / block_size) blocks of the model's KV bytes per block (K and V of every
// layer), so "N documents" is N times that many blocks, whatever the model or KV element type.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "kv/kv_shape.h"

namespace lazyattn::bench {

struct KvBudget {
    int32_t num_blocks = 0;
    int64_t bytes_per_block = 0;  // K and V, all layers
    int32_t block_size = 0;       // tokens per block
    int32_t blocks_per_doc = 0;

    int64_t bytes_per_token() const { return block_size > 0 ? bytes_per_block / block_size : 0; }
    double mib() const { return double(num_blocks) * double(bytes_per_block) / double(1 << 20); }
    double docs() const { return blocks_per_doc > 0 ? double(num_blocks) / double(blocks_per_doc) : 0; }
    std::string describe() const;  // "13.3 documents (213 blocks, 74.9 MiB, 23040 B/token)"
};

// `shape` gives the per-block size (num_blocks is ignored). `docs` > 0; the pool is rounded up
// to whole blocks.
Expected<KvBudget> kv_budget_for_docs(const kv::KvShape& shape, double docs, int32_t doc_tokens);
// `mib` > 0; as many whole blocks as fit.
Expected<KvBudget> kv_budget_for_mib(const kv::KvShape& shape, double mib, int32_t doc_tokens);

}  // namespace lazyattn::bench
