// ForwardBatch: the plan of one forward step, built once per step by the engine and handed to
// every layer. Tokens of all sequences are flattened into rows; each sequence names the KV spans
// it attends to (see kernels/params/attention_params.h). The KV pool operations a step needs
// besides storing its rows (block-attn's copies) are part of the plan too, so every operation on
// the pool's memory goes through the backend in forward. No global forward context exists.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "kernels/params/attention_params.h"
#include "model/kv_block_copy.h"

namespace lazyattn::model {

struct ForwardBatch {
    std::vector<int32_t> token_ids;        // [num_rows]
    std::vector<int32_t> positions;        // [num_rows] logical position of each query
    std::vector<int32_t> store_positions;  // [num_rows] position its key is rotated at when stored
    std::vector<int32_t> slot_mapping;     // [num_rows] block * block_size + offset of its K/V
    std::vector<int32_t> block_ids;        // referenced by spans
    std::vector<kernels::AttentionSpan> spans;
    std::vector<kernels::KeyOverride> overrides;  // referenced by spans (sparse recompute)
    std::vector<kernels::AttentionSeq> seqs;
    std::vector<int32_t> logit_rows;  // rows whose logits the step returns, in that order
    // Sequences whose query rows' attention mass per key the step measures (a request's probe,
    // engine::DocumentReuse @query), summed over mass_layers (empty: every layer).
    std::vector<int32_t> mass_seqs;
    std::vector<int32_t> mass_layers;
    bool keys_rotated = true;  // false for lazy-k: keys are stored raw
    // Run in order, in each layer before that layer's rows are stored (a copy's source may be a
    // block this step's rows or a later copy write to: it was released when the copy was planned).
    std::vector<KvBlockCopy> kv_copies;

    int32_t num_rows() const { return int32_t(token_ids.size()); }
    // Checks every index against the pool and the model (a bad plan must never reach a kernel).
    Status validate(int32_t num_blocks, int32_t block_size, int32_t vocab_size) const;
};

}  // namespace lazyattn::model
