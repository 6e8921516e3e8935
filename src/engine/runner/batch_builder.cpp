#include "engine/runner/batch_builder.h"

namespace lazyattn::engine {

int32_t add_span(model::ForwardBatch& batch, const std::vector<int32_t>& blocks, int32_t first_block, int32_t n,
                 int32_t logical, int32_t stored, int32_t block_size) {
    if (n <= 0) return -1;
    batch.spans.push_back({int32_t(batch.block_ids.size()), n, logical, stored});
    batch.block_ids.insert(batch.block_ids.end(), blocks.begin() + first_block,
                           blocks.begin() + first_block + kv::blocks_for(n, block_size));
    return int32_t(batch.spans.size()) - 1;
}

void add_plain_sequence(model::ForwardBatch& batch, const std::vector<int32_t>& new_tokens, int32_t start,
                        const std::vector<int32_t>& block_table, int32_t block_size, int logits) {
    const int32_t n = int32_t(new_tokens.size());
    const int32_t first_row = batch.num_rows();
    for (int32_t i = 0; i < n; ++i) {
        const int32_t pos = start + i;
        batch.token_ids.push_back(new_tokens[i]);
        batch.positions.push_back(pos);
        batch.store_positions.push_back(pos);
        batch.slot_mapping.push_back(slot_of(block_table, pos, block_size));
        if (logits == 2 || (logits == 1 && i == n - 1)) batch.logit_rows.push_back(first_row + i);
    }
    const int32_t span_index = add_span(batch, block_table, 0, start + n, 0, 0, block_size);
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
        batch.slot_mapping.push_back(slot_of(block_table, local, block_size));
    }
    const int32_t span_index = int32_t(batch.spans.size());
    add_span(batch, anchor.blocks, 0, base, 0, 0, block_size);
    add_span(batch, block_table, 0, start + n, base, stored_base, block_size);
    batch.seqs.push_back({first_row, n, span_index, int32_t(batch.spans.size())});
}

}  // namespace lazyattn::engine
