// The optimized CPU paged attention kernel (prefill and decode): online softmax over key blocks,
// the query heads of one KV head processed together (GQA), RoPE offsets applied per span.
//
// Plan, then run (FlashInfer's split): an AttentionPlan is built once per forward step from the
// step's layout (kernels::AttentionStep) and serves every layer's call: the task list (query
// tiles for prefill rows, the decode kernel's items for one-row sequences), and which blocks
// prefill reads so a 16-bit cache is widened once per layer. Only what a layer changes is redone
// per call: the widened data itself, and decode items per sliding window (local and global
// layers see different keys).
#pragma once

#include <cstdint>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/params/attention_params.h"
#include "kernels/params/attention_step.h"

namespace lazyattn::backend::cpu {

class AttentionPlan {
public:
    // Plans `step` (its arrays must outlive the calls that run this plan).
    void build(const kernels::AttentionStep& step);
    bool built() const { return built_; }

    struct Task {  // (sequence, kv head, query rows[, query heads]) of a prefill sequence
        int32_t seq, kvh, begin, end;
        bool tile;               // the tile kernel (several rows), else attend_rows
        int32_t g_begin, g_end;  // query heads of the group (attend_rows)
    };
    struct DecodeItem {  // blocks [block_begin, block_end) of one span for one decode (seq, kv head)
        int32_t seq, kvh, span, block_begin, block_end;
    };
    struct DecodeItems {
        int32_t sliding_window = -1;
        std::vector<DecodeItem> items;
        std::vector<int32_t> first_item;  // per (decode sequence, kv head), then the end
    };

    std::vector<Task> tasks;
    std::vector<int32_t> decode_seqs;  // one-row sequences the decode kernel takes
    bool tile_ok = false, decode_ok = false;
    // Prefill over a 16-bit cache: the pool blocks prefill tasks read (one scratch slot each)
    // and the step's block list with those entries remapped to their slots; empty when the
    // scratch would be too large (the tasks then widen per tile).
    std::vector<int32_t> wide_blocks, wide_block_ids;
    // Rows of those slots that a span overrides with a private row (sparse recompute): a block
    // with any gets a slot of its own, and its copy takes row `row` from the pool slot src_slot.
    struct WidePatch {
        int32_t wide_slot, row;
        int32_t src_slot;
    };
    std::vector<WidePatch> wide_patches;
    // The decode kernel's items under p's sliding window (built on the first call with it).
    const DecodeItems& decode_items(const kernels::AttentionParams& p);

private:
    // Gives span block b (pool block id) a slot of its own with its private rows, if it has any.
    bool add_patched_block(const kernels::AttentionStep& step, const kernels::AttentionSpan& span, int32_t b,
                           int32_t id);

    kernels::AttentionStep step_;
    bool built_ = false;
    std::vector<DecodeItems> by_window_;
};

// Runs one layer's attention under `plan` (built for the step p belongs to).
void attention(const kernels::AttentionParams& p, AttentionPlan& plan, ThreadPool& pool);
// Plans for itself, then runs (a call outside a planned step: kernel tests, tools).
void attention(const kernels::AttentionParams& p, ThreadPool& pool);

// The instruction set of the per-row kernel that serves shapes the AVX-512 tiles do not (and
// every shape under LAZYATTN_CPU_ISA=avx2|scalar).
CpuIsa attention_rows_isa();

}  // namespace lazyattn::backend::cpu
