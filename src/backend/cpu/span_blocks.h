// How the CPU attention kernels read a span: one KV block at a time, in the cache's own element
// types. Where the span overrides some of a block's tokens with the request's private rows
// (sparse recompute, kernels::KeyOverride), the block is assembled in the caller's scratch: the
// shared block's rows, then each overridden row copied over from its private slot. Every kernel
// then reads it exactly as it reads a pool block (fp32 widening, quantized rows in registers), so
// the rule "private row overrides shared row" is written once, here, for all of them; the shared
// copy is never written. Also here: a block's rows as fp32, and lazy-k's rotation of raw keys as
// they are read, which every kernel that reads keys in fp32 shares.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/rope_cpu.h"
#include "backend/cpu/simd/rope_rotate.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::backend::cpu {

// Scratch span_block_kv may need: a block of keys and one of values in the widest element type.
inline size_t span_block_scratch_bytes(int32_t block_size, int32_t head_dim) {
    return 2 * size_t(block_size) * size_t(head_dim) * sizeof(float);
}

struct BlockKv {
    const void* k;
    const void* v;
};

// The span's overrides of tokens [t0, t0 + n): [*first, *end) of `overrides` (the step's list,
// null when it has none; empty when the span has none there).
inline void block_overrides(const kernels::KeyOverride* overrides, const kernels::AttentionSpan& span, int32_t t0,
                            int32_t n, const kernels::KeyOverride** first, const kernels::KeyOverride** end) {
    *first = *end = nullptr;
    if (span.override_count <= 0 || overrides == nullptr) return;
    const kernels::KeyOverride* all = overrides + span.override_begin;
    const kernels::KeyOverride* stop = all + span.override_count;
    const auto before = [](const kernels::KeyOverride& o, int32_t t) { return o.token < t; };
    *first = std::lower_bound(all, stop, t0, before);
    *end = std::lower_bound(*first, stop, t0 + n, before);
}

// Keys and values of span block b (its tokens [b * block_size, + n)) for KV head kvh: the pool
// block itself, or its copy in `scratch` (span_block_scratch_bytes) with the overridden rows.
inline BlockKv span_block_kv(const kernels::AttentionParams& p, const kernels::AttentionSpan& span, int32_t b,
                             int32_t n, int32_t kvh, char* scratch) {
    const int32_t t0 = b * p.block_size;
    const int32_t block = p.block_ids[span.block_offset + b];
    const BlockKv shared{p.k_at(block, kvh), p.v_at(block, kvh)};
    const kernels::KeyOverride *first, *end;
    block_overrides(p.overrides, span, t0, n, &first, &end);
    if (first == end) return shared;
    const int64_t k_row = kernels::kv_bytes(p.k_dtype, p.head_dim);
    const int64_t v_row = kernels::kv_bytes(p.v_dtype, p.head_dim);
    char* k = scratch;
    char* v = scratch + p.block_size * k_row;
    std::memcpy(k, shared.k, size_t(n * k_row));
    std::memcpy(v, shared.v, size_t(n * v_row));
    for (const kernels::KeyOverride* o = first; o != end; ++o) {
        const int64_t j = o->token - t0;
        std::memcpy(k + j * k_row, p.k_row(o->slot, kvh), size_t(k_row));
        std::memcpy(v + j * v_row, p.v_row(o->slot, kvh), size_t(v_row));
    }
    return {k, v};
}

// Rows [0, n) of `cache` (one block and KV head) as fp32: in place for fp32, otherwise widened
// (or dequantized) into buf ([block_size * head_dim]).
inline const float* rows_f32(const void* cache, kernels::KvDtype dtype, int32_t n, int32_t d, float* buf) {
    if (dtype == kernels::KvDtype::kF32) return static_cast<const float*>(cache);
    kernels::kv_to_f32(cache, dtype, buf, int64_t(n) * d);
    return buf;
}

// Rows [0, n) of a block's keys and values (span_block_kv) as fp32.
inline void block_kv(const kernels::AttentionParams& p, BlockKv raw, int32_t n, float* kbuf, float* vbuf,
                     const float** k, const float** v) {
    *k = rows_f32(raw.k, p.k_dtype, n, p.head_dim, kbuf);
    *v = rows_f32(raw.v, p.v_dtype, n, p.head_dim, vbuf);
}

// lazy-k: rotates keys [0, n) of a block, key j to position first_pos + j, into krot (cs: scratch
// for one position's angles when they are not in the table).
inline void rotate_keys(const kernels::RopeParams& rope, const float* k, float* krot, int32_t n, int32_t d,
                        int32_t first_pos, float* cs) {
    const simd::RopeRotateFn fast = simd::rope_rotate_kernel(d, rope.rotary_dims);
    for (int32_t j = 0; j < n; ++j) {
        const int32_t pos = first_pos + j;
        const float* angles = cs;
        if (rope.cos_sin_table != nullptr && pos >= 0 && pos < rope.table_positions) {
            angles = rope.cos_sin_table + int64_t(pos) * rope.rotary_dims;  // the table's row, no copy
        } else {
            rope_cos_sin(rope, pos, cs);
        }
        if (fast != nullptr) {
            fast(angles, k + j * d, krot + j * d, d, rope.rotary_dims, rope.neox);
        } else {
            rope_rotate_with(rope, angles, k + j * d, krot + j * d, d);
        }
    }
}

}  // namespace lazyattn::backend::cpu
