// Parameters of the paged attention kernels (prefill and decode are the same op: a sequence
// brings any number of query rows). Positions are logical; every KV span carries where it sits
// in the request (logical_start) and where its keys were rotated when stored (stored_base).
// See docs/design.md for the derivation.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/params/kv_dtype.h"

namespace lazyattn::kernels {

// One contiguous run of cached tokens a sequence reads, in whole blocks.
struct AttentionSpan {
    int32_t block_offset;   // index into AttentionParams::block_ids of the span's first block
    int32_t num_tokens;     // true tokens; padding slots in the last block are never read
    int32_t logical_start;  // logical position of the span's token 0 in this request
    int32_t stored_base;    // position its keys were rotated at when written (lazy-k: unused)
    // The span's attention logits are q.k * scale * logit_scale + logit_bias: a temperature and a
    // log-weight per span (document rescaling, engine::DocumentReuse). 1 and 0 leave it plain.
    float logit_scale = 1.0f;
    float logit_bias = 0.0f;
};

// One sequence of the batch: its query rows and the spans it attends to.
struct AttentionSeq {
    int32_t query_start;  // first row of q/out belonging to this sequence
    int32_t num_queries;
    int32_t span_begin;  // spans[span_begin, span_end)
    int32_t span_end;
};

// How the kernel applies RoPE. Keys are stored either rotated (at stored_base + i: modes lazy,
// block-attn, prefix, none) or raw (lazy-k). Queries always arrive raw and are rotated by the
// kernel: to p - delta per span when keys are rotated, to p when the kernel rotates keys too.
struct RopeParams {
    const float* inv_freq;  // [rotary_dims / 2] frequency per pair (scaling already applied)
    int32_t rotary_dims;    // dims [0, rotary_dims) rotate; the rest pass through
    bool neox;              // pairs (i, i + rotary_dims/2) instead of (2i, 2i+1)
    float position_scale;   // linear RoPE scaling: angle = pos * position_scale * inv_freq
    // Optional precomputed (cos, sin) per position and pair, [table_positions, rotary_dims/2, 2],
    // the same angles as above; positions outside [0, table_positions) are computed directly.
    const float* cos_sin_table;
    int32_t table_positions;
    // ggml's attn_factor (Phi-3 LongRoPE's rope.scaling.attn_factor): cos and sin (table included)
    // are multiplied by it, so the rotated dims of q and k grow by it and the rest do not.
    // Re-rotating stored keys by a delta (block-attn) must use 1.
    float mscale = 1.0f;
};

struct AttentionParams {
    const float* q;            // [num_rows, num_heads, head_dim], unrotated
    const int32_t* q_pos;      // [num_rows] logical position of each query row
    float* out;                // [num_rows, num_heads, head_dim]
    const void* k_cache;       // [num_blocks, num_kv_heads, block_size, head_dim] of kv_dtype
    const void* v_cache;       // [num_blocks, num_kv_heads, block_size, head_dim] of kv_dtype
    const int32_t* block_ids;  // referenced by spans
    const AttentionSpan* spans;
    const AttentionSeq* seqs;  // [num_seqs]
    int32_t num_seqs;
    int32_t num_heads;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t block_size;
    float scale;  // usually 1/sqrt(head_dim)
    RopeParams rope;
    bool keys_rotated;  // false: lazy-k (kernel rotates each key to its logical position)
    KvDtype kv_dtype = KvDtype::kF32;
    // Sliding-window attention (Gemma 3's local layers): a query at logical position p sees a key
    // at logical position k iff k <= p and p - k < sliding_window. 0: no window (every k <= p).
    // The mask is on logical distance, which is what the kernel knows in every cache mode, so
    // lazy, lazy-k and block-attn stay equal under it.
    int32_t sliding_window = 0;
    // Host-side facts of the plan for a device backend, which shapes its launch by them and
    // cannot read the arrays above (the host backends ignore them): the most query rows of one
    // sequence and the most tokens one sequence's spans hold.
    int32_t max_queries_per_seq = 0;
    int32_t max_kv_tokens = 0;
    // The backend planned this step's layout (Backend::plan_attention) and this call shares it:
    // the backend runs its plan instead of planning again. False: the call plans for itself.
    bool planned = false;

    // Tokens [first, end) of a span (its token t sits at logical_start + t) that a query at
    // logical position `pos` sees; empty (first >= end) when none.
    void visible_range(const AttentionSpan& span, int32_t pos, int32_t* first, int32_t* end) const {
        const int64_t last = int64_t(pos) - span.logical_start;  // the span's last visible token
        *end = int32_t(std::max<int64_t>(0, std::min<int64_t>(span.num_tokens, last + 1)));
        *first = sliding_window > 0 ? int32_t(std::max<int64_t>(0, last - sliding_window + 1)) : 0;
        if (*first > *end) *first = *end;
    }

    // Offset in elements of (block, kv head)'s first key, and its address.
    int64_t cache_offset(int32_t block, int32_t kv_head) const {
        return (int64_t(block) * num_kv_heads + kv_head) * block_size * head_dim;
    }
    const void* k_at(int32_t block, int32_t kv_head) const {
        return static_cast<const char*>(k_cache) + cache_offset(block, kv_head) * kv_dtype_bytes(kv_dtype);
    }
    const void* v_at(int32_t block, int32_t kv_head) const {
        return static_cast<const char*>(v_cache) + cache_offset(block, kv_head) * kv_dtype_bytes(kv_dtype);
    }
};

}  // namespace lazyattn::kernels
