// The attention layout of one forward step, in host memory: what every layer's attention call
// of the step shares (the sequences, their spans and blocks, the query positions, the shapes).
// A backend plans from it once per step, before the layers (FlashInfer's plan/run split): the
// CPU builds its task list and the blocks to widen, a device backend splits decode rows from
// prefill rows, sizes split-K and its workspace and uploads the per-kind arrays once.
#pragma once

#include <cstdint>

#include "kernels/params/attention_params.h"
#include "kernels/params/kv_dtype.h"

namespace lazyattn::kernels {

struct AttentionStep {
    const AttentionSeq* seqs = nullptr;  // [num_seqs]
    int32_t num_seqs = 0;
    const AttentionSpan* spans = nullptr;  // referenced by seqs
    int32_t num_spans = 0;
    const int32_t* block_ids = nullptr;  // referenced by spans
    int32_t num_block_ids = 0;
    const KeyOverride* overrides = nullptr;  // referenced by spans (null: none)
    const int32_t* q_pos = nullptr;          // [num_rows]
    int32_t num_rows = 0;
    int32_t num_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 0;
    KvDtype k_dtype = KvDtype::kF32, v_dtype = KvDtype::kF32;
};

// The step of an attention call whose arrays are in host memory (the CPU backends, tests).
inline AttentionStep step_of(const AttentionParams& p) {
    AttentionStep s;
    s.seqs = p.seqs;
    s.num_seqs = p.num_seqs;
    s.spans = p.spans;
    s.q_pos = p.q_pos;
    s.block_ids = p.block_ids;
    s.overrides = p.overrides;
    for (int32_t i = 0; i < p.num_seqs; ++i) {
        s.num_spans = std::max(s.num_spans, p.seqs[i].span_end);
        s.num_rows = std::max(s.num_rows, p.seqs[i].query_start + p.seqs[i].num_queries);
    }
    for (int32_t i = 0; i < s.num_spans; ++i) {
        const AttentionSpan& sp = p.spans[i];
        s.num_block_ids =
            std::max(s.num_block_ids, sp.block_offset + (sp.num_tokens + p.block_size - 1) / p.block_size);
    }
    s.num_heads = p.num_heads;
    s.num_kv_heads = p.num_kv_heads;
    s.head_dim = p.head_dim;
    s.block_size = p.block_size;
    s.k_dtype = p.k_dtype;
    s.v_dtype = p.v_dtype;
    return s;
}

}  // namespace lazyattn::kernels
