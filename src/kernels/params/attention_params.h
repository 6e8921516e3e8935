// Parameters of the paged attention kernels (prefill and decode are the same op: a sequence
// brings any number of query rows). Positions are logical; every KV span carries where it sits
// in the request (logical_start) and where its keys were rotated when stored (stored_base).
// See docs/design.md for the derivation.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/params/kv_dtype.h"

// The span rule below is shared with the CUDA kernels, which call it from device code.
#if defined(__CUDACC__)
#define LA_SPAN_RULE __host__ __device__ inline
#else
#define LA_SPAN_RULE inline
#endif

namespace lazyattn::kernels {

// Δ of keys rotated at stored_base + i that sit at logical_start + i: the offset by which the
// query is rotated back (lazy) or the stored keys are re-rotated forward (block-attn's copies).
LA_SPAN_RULE int32_t rotation_delta(int32_t logical_start, int32_t stored_base) { return logical_start - stored_base; }

// A token of a span that the request recomputed privately (sparse recompute, see
// engine::DocumentReuse): the kernels read its key and value from `slot` (block id * block_size +
// offset in the block) instead of the span's shared row. The private row is stored in the span's
// rotation frame (rotated at stored_base + token, or raw in lazy-k), so the span's query rotation
// serves both rows. The shared copy is never written.
struct KeyOverride {
    int32_t token;  // index in the span, [0, num_tokens)
    int32_t slot;
};

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
    // The span's private rows: AttentionParams::overrides[override_begin, + override_count),
    // sorted by token, each token at most once. 0: every row is the shared one.
    int32_t override_begin = 0;
    int32_t override_count = 0;

    // Δ: how far the span sits from where its keys were rotated. Rotating the raw query to
    // p - Δ scores every stored key as if it had been rotated at its logical position
    // (<R(p) q, R(S + i) k> = <R(p - Δ) q, R(i) k>, docs/design.md §2).
    LA_SPAN_RULE int32_t delta() const { return rotation_delta(logical_start, stored_base); }
    // Logical position of the span's token t (what lazy-k rotates the key to, and what the
    // causal and sliding-window masks compare with the query's position).
    LA_SPAN_RULE int32_t key_position(int32_t t) const { return logical_start + t; }
};

// ---- The span rule: what a query at logical position `pos` sees of a span, and how. ----
// Every optimized kernel (CPU and CUDA) reads spans through these; the scalar reference
// (kernels/ref/reference_ops.cpp) writes the rule again from its definition on purpose.

// Position the raw query is rotated to for a span: p - Δ when the keys are stored rotated, p when
// the kernel rotates each key to its logical position itself (lazy-k).
LA_SPAN_RULE int32_t query_rope_position(const AttentionSpan& span, int32_t pos, bool keys_rotated) {
    return keys_rotated ? pos - span.delta() : pos;
}

// Causality: tokens [0, end) of the span sit at logical positions <= pos.
LA_SPAN_RULE int32_t span_causal_end(const AttentionSpan& span, int32_t pos) {
    const int64_t n = span.num_tokens > 0 ? span.num_tokens : 0;
    const int64_t end = int64_t(pos) - span.logical_start + 1;
    return int32_t(end < 0 ? 0 : end < n ? end : n);
}

// Sliding window (llama.cpp's rule): a query at pos sees a key at key_pos only if
// pos - key_pos < window. window 0: no window.
LA_SPAN_RULE bool in_window(int32_t pos, int32_t key_pos, int32_t window) {
    return window <= 0 || int64_t(pos) - key_pos < window;
}

// Whether a query at pos sees a key at logical position key_pos at all (causal and window).
LA_SPAN_RULE bool key_visible(int32_t pos, int32_t key_pos, int32_t window) {
    return key_pos <= pos && in_window(pos, key_pos, window);
}

// Tokens [*first, *end) of a span that a query at `pos` sees under `window`; empty (first >= end)
// when none.
LA_SPAN_RULE void span_visible_range(const AttentionSpan& span, int32_t pos, int32_t window, int32_t* first,
                                     int32_t* end) {
    *end = span_causal_end(span, pos);
    const int64_t f = window > 0 ? int64_t(pos) - span.logical_start - window + 1 : 0;
    *first = f <= 0 ? 0 : f < *end ? int32_t(f) : *end;
}

// Where token t of a span is read from: the private slot that overrides it (binary search over the
// span's sorted overrides; `overrides` may be null when no span has any), else -1.
LA_SPAN_RULE int32_t span_override_slot(const AttentionSpan& span, const KeyOverride* overrides, int32_t t) {
    if (span.override_count <= 0 || overrides == nullptr) return -1;
    int32_t lo = span.override_begin, hi = span.override_begin + span.override_count;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (overrides[mid].token < t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < span.override_begin + span.override_count && overrides[lo].token == t ? overrides[lo].slot : -1;
}

// The cache slot (block id * block_size + offset) token t of a span is read from: its private row
// where the span overrides it, else its shared row. Every kernel reads keys through this rule (the
// CPU kernels a block at a time, see backend/cpu/span_blocks.h).
LA_SPAN_RULE int64_t span_key_slot(const AttentionSpan& span, const int32_t* block_ids, const KeyOverride* overrides,
                                   int32_t block_size, int32_t t) {
    const int32_t own = span_override_slot(span, overrides, t);
    if (own >= 0) return own;
    return int64_t(block_ids[span.block_offset + t / block_size]) * block_size + t % block_size;
}

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
    const void* k_cache;       // [num_blocks, num_kv_heads, block_size, head_dim] of k_dtype
    const void* v_cache;       // [num_blocks, num_kv_heads, block_size, head_dim] of v_dtype
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
    KvDtype k_dtype = KvDtype::kF32;
    KvDtype v_dtype = KvDtype::kF32;
    // Sliding-window attention (Gemma 3's local layers): a query at logical position p sees a key
    // at logical position k iff k <= p and p - k < sliding_window. 0: no window (every k <= p).
    // The mask is on logical distance, which is what the kernel knows in every cache mode, so
    // lazy, lazy-k and block-attn stay equal under it.
    int32_t sliding_window = 0;
    // The spans' private rows (AttentionSpan::override_begin); null when no span has any.
    const KeyOverride* overrides = nullptr;
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
        span_visible_range(span, pos, sliding_window, first, end);
    }
    // Position the raw query is rotated to for this span (see query_rope_position).
    int32_t query_rope_position(const AttentionSpan& span, int32_t pos) const {
        return kernels::query_rope_position(span, pos, keys_rotated);
    }

    // Offset in elements of (block, kv head)'s first key (a multiple of head_dim, so of every
    // type's scale group), and the addresses of its first key and value.
    int64_t cache_offset(int32_t block, int32_t kv_head) const {
        return (int64_t(block) * num_kv_heads + kv_head) * block_size * head_dim;
    }
    const void* k_at(int32_t block, int32_t kv_head) const {
        return static_cast<const char*>(k_cache) + kv_bytes(k_dtype, cache_offset(block, kv_head));
    }
    const void* v_at(int32_t block, int32_t kv_head) const {
        return static_cast<const char*>(v_cache) + kv_bytes(v_dtype, cache_offset(block, kv_head));
    }
    // The key and value rows of a cache slot (block id * block_size + offset) for one KV head.
    const void* k_row(int64_t slot, int32_t kv_head) const {
        return static_cast<const char*>(k_at(int32_t(slot / block_size), kv_head)) +
               kv_bytes(k_dtype, slot % block_size * head_dim);
    }
    const void* v_row(int64_t slot, int32_t kv_head) const {
        return static_cast<const char*>(v_at(int32_t(slot / block_size), kv_head)) +
               kv_bytes(v_dtype, slot % block_size * head_dim);
    }
};

}  // namespace lazyattn::kernels
