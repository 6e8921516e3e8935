#include "engine/runner/batch_builder.h"

namespace lazyattn::engine {

void add_plain_sequence(model::ForwardBatch& batch, const std::vector<int32_t>& new_tokens, int32_t start,
                        const std::vector<int32_t>& block_table, int32_t block_size, int logits) {
    const int32_t n = int32_t(new_tokens.size());
    const int32_t first_row = batch.num_rows();
    for (int32_t i = 0; i < n; ++i) {
        const int32_t pos = start + i;
        batch.token_ids.push_back(new_tokens[i]);
        batch.positions.push_back(pos);
        batch.store_positions.push_back(pos);
        batch.slot_mapping.push_back(block_table[pos / block_size] * block_size + pos % block_size);
        if (logits == 2 || (logits == 1 && i == n - 1)) batch.logit_rows.push_back(first_row + i);
    }
    const int32_t block_offset = int32_t(batch.block_ids.size());
    const int32_t total = start + n;
    const int32_t num_blocks = (total + block_size - 1) / block_size;
    batch.block_ids.insert(batch.block_ids.end(), block_table.begin(), block_table.begin() + num_blocks);
    const int32_t span_index = int32_t(batch.spans.size());
    batch.spans.push_back({block_offset, total, 0, 0});
    batch.seqs.push_back({first_row, n, span_index, span_index + 1});
}

void add_anchored_sequence(model::ForwardBatch& batch, const std::vector<int32_t>& new_tokens, int32_t start,
                           const std::vector<int32_t>& block_table, const PrefixSpan& anchor, int32_t block_size,
                           bool keys_from_zero) {
    const int32_t n = int32_t(new_tokens.size()), base = anchor.num_tokens;
    const int32_t stored_base = keys_from_zero ? 0 : base;
    const int32_t first_row = batch.num_rows();
    for (int32_t i = 0; i < n; ++i) {
        const int32_t local = start + i;
        batch.token_ids.push_back(new_tokens[i]);
        batch.positions.push_back(base + local);
        batch.store_positions.push_back(stored_base + local);
        batch.slot_mapping.push_back(block_table[local / block_size] * block_size + local % block_size);
    }
    const int32_t span_index = int32_t(batch.spans.size());
    batch.spans.push_back({int32_t(batch.block_ids.size()), base, 0, 0});
    batch.block_ids.insert(batch.block_ids.end(), anchor.blocks.begin(),
                           anchor.blocks.begin() + (base + block_size - 1) / block_size);
    const int32_t total = start + n;
    batch.spans.push_back({int32_t(batch.block_ids.size()), total, base, stored_base});
    batch.block_ids.insert(batch.block_ids.end(), block_table.begin(),
                           block_table.begin() + (total + block_size - 1) / block_size);
    batch.seqs.push_back({first_row, n, span_index, span_index + 2});
}

}  // namespace lazyattn::engine
