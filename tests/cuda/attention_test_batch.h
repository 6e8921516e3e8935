// Random attention batches in the layout the engine builds: per sequence, segments stored from
// position 0 (stored_base 0, so delta = logical_start) back to back, then a tail stored at its
// logical positions; the query rows are the tail's last num_queries tokens. Physical blocks are
// shuffled; padding slots and unused blocks hold NaN, so a kernel that reads them fails. With
// override_share, segment tokens are read from private rows (kernels::KeyOverride) and their
// shared rows hold NaN, so a kernel that reads the shared row of an overridden token fails too.
#pragma once

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cuda/cuda_attention_params.h"
#include "cuda_test_util.h"

namespace lazyattn::cuda_test {

struct SeqSpec {
    std::vector<int32_t> segments;  // lengths (0 allowed: an empty span)
    int32_t tail;                   // tail length (>= 1)
    int32_t num_queries;            // query rows at the tail's end (1..tail)
    bool rescaled = false;          // segments get a random logit_scale and logit_bias
    double override_share = 0.0;    // each segment token overridden by a private row with this probability
};

struct RopeSpec {
    bool neox = false;
    int32_t rotary_dims = 0;  // 0: head_dim
    float position_scale = 1.0f;
    int32_t table_positions = 0;  // > 0: a cos/sin table for [0, table_positions)
};

struct AttentionShape {
    int32_t num_heads;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t block_size = 16;
};

// The host side of a batch: plan, queries, bf16 cache and RoPE tables.
struct HostBatch {
    AttentionShape shape;
    std::vector<int32_t> block_ids;
    std::vector<kernels::AttentionSpan> spans;
    std::vector<kernels::KeyOverride> overrides;
    std::vector<kernels::AttentionSeq> seqs;
    std::vector<int32_t> q_pos;
    int32_t num_blocks = 0;
    int32_t max_queries = 0;
    int32_t max_kv_tokens = 0;
    std::vector<float> q;    // [rows, num_heads, head_dim]
    std::vector<bf16> k, v;  // [num_blocks, num_kv_heads, block_size, head_dim]
    std::vector<float> inv_freq, table;
    RopeSpec rope;
    int32_t sliding_window = 0;  // AttentionParams::sliding_window
    int32_t rows() const { return int32_t(q_pos.size()); }
    int64_t out_size() const { return int64_t(rows()) * shape.num_heads * shape.head_dim; }
};

// Plans the batch and fills the cache with random bf16 values (NaN where no token lives).
inline HostBatch make_batch(const AttentionShape& shape, const RopeSpec& rope, const std::vector<SeqSpec>& specs,
                            std::mt19937_64& rng) {
    HostBatch b;
    b.shape = shape;
    b.rope = rope;
    if (b.rope.rotary_dims == 0) b.rope.rotary_dims = shape.head_dim;
    const int32_t bs = shape.block_size;
    int32_t next_block = 0;
    std::vector<std::pair<int32_t, int32_t>> live;  // (logical block, tokens in it)
    for (const SeqSpec& spec : specs) {
        const int32_t span_begin = int32_t(b.spans.size());
        int32_t logical = 0;
        std::vector<int32_t> lens = spec.segments;
        lens.push_back(spec.tail);
        int32_t kv_tokens = 0;
        for (size_t i = 0; i < lens.size(); ++i) {
            const bool tail = i + 1 == lens.size();
            b.spans.push_back({int32_t(b.block_ids.size()), lens[i], logical, tail ? logical : 0});
            if (spec.rescaled && !tail) {
                b.spans.back().logit_scale = 0.5f + float(rng() % 1000) / 1000.0f;
                b.spans.back().logit_bias = -2.0f + 4.0f * float(rng() % 1000) / 1000.0f;
            }
            for (int32_t t = 0; t < lens[i]; t += bs) {
                live.push_back({next_block, std::min(bs, lens[i] - t)});
                b.block_ids.push_back(next_block++);
            }
            logical += lens[i];
            kv_tokens += lens[i];
        }
        const int32_t nq = std::min(spec.num_queries, spec.tail);
        b.seqs.push_back({int32_t(b.q_pos.size()), nq, span_begin, int32_t(b.spans.size())});
        for (int32_t i = 0; i < nq; ++i) b.q_pos.push_back(logical - nq + i);
        b.max_queries = std::max(b.max_queries, nq);
        b.max_kv_tokens = std::max(b.max_kv_tokens, kv_tokens);
    }
    const int32_t shared_blocks = next_block + 3;
    std::vector<int32_t> perm(shared_blocks);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (auto& id : b.block_ids) id = perm[id];
    // Private rows in blocks past the shared ones, slots in a shuffled order.
    for (size_t s = 0; s < specs.size(); ++s) {
        for (int32_t si = b.seqs[s].span_begin; si + 1 < b.seqs[s].span_end; ++si) {
            kernels::AttentionSpan& span = b.spans[si];
            span.override_begin = int32_t(b.overrides.size());
            for (int32_t t = 0; t < span.num_tokens; ++t) {
                if (double(rng() % 1000) < specs[s].override_share * 1000) b.overrides.push_back({t, 0});
            }
            span.override_count = int32_t(b.overrides.size()) - span.override_begin;
        }
    }
    const int32_t private_blocks = int32_t((b.overrides.size() + bs - 1) / bs);
    std::vector<int32_t> private_slots(size_t(private_blocks) * bs);
    std::iota(private_slots.begin(), private_slots.end(), shared_blocks * bs);
    std::shuffle(private_slots.begin(), private_slots.end(), rng);
    for (size_t i = 0; i < b.overrides.size(); ++i) b.overrides[i].slot = private_slots[i];
    b.num_blocks = shared_blocks + private_blocks;

    const int64_t block_elems = int64_t(shape.num_kv_heads) * bs * shape.head_dim;
    b.k.assign(size_t(b.num_blocks * block_elems), bf16_nan());
    b.v.assign(b.k.size(), bf16_nan());
    std::uniform_real_distribution<float> kv_dist(-1.0f, 1.0f);
    for (const auto& [logical_block, tokens] : live) {
        const int64_t base = int64_t(perm[logical_block]) * block_elems;
        for (int32_t h = 0; h < shape.num_kv_heads; ++h) {
            for (int64_t e = 0; e < int64_t(tokens) * shape.head_dim; ++e) {
                const int64_t i = base + int64_t(h) * bs * shape.head_dim + e;
                b.k[i] = to_bf16(kv_dist(rng));
                b.v[i] = to_bf16(kv_dist(rng));
            }
        }
    }
    for (const kernels::AttentionSeq& seq : b.seqs) {
        for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
            const kernels::AttentionSpan& span = b.spans[si];
            for (int32_t i = 0; i < span.override_count; ++i) {
                const kernels::KeyOverride& o = b.overrides[span.override_begin + i];
                const int64_t shared = int64_t(b.block_ids[span.block_offset + o.token / bs]) * bs + o.token % bs;
                for (int32_t h = 0; h < shape.num_kv_heads; ++h) {
                    const auto row = [&](int64_t slot) {
                        return ((slot / bs * shape.num_kv_heads + h) * bs + slot % bs) * shape.head_dim;
                    };
                    for (int32_t e = 0; e < shape.head_dim; ++e) {
                        b.k[row(o.slot) + e] = to_bf16(kv_dist(rng));
                        b.v[row(o.slot) + e] = to_bf16(kv_dist(rng));
                        b.k[row(shared) + e] = b.v[row(shared) + e] = bf16_nan();
                    }
                }
            }
        }
    }
    b.q = testing::random_floats(rng, size_t(b.out_size()), -2.0f, 2.0f);
    b.inv_freq = rope_inv_freq(b.rope.rotary_dims);
    if (b.rope.table_positions > 0) b.table = rope_table(b.inv_freq, b.rope.position_scale, b.rope.table_positions);
    return b;
}

// Device copies of a HostBatch and the params that point at them.
struct DeviceBatch {
    DeviceBuffer<int32_t> block_ids, q_pos;
    DeviceBuffer<kernels::AttentionSpan> spans;
    DeviceBuffer<kernels::KeyOverride> overrides;
    DeviceBuffer<kernels::AttentionSeq> seqs;
    DeviceBuffer<float> q, out, inv_freq, table;
    DeviceBuffer<bf16> k, v;

    explicit DeviceBatch(const HostBatch& b)
        : block_ids(b.block_ids),
          q_pos(b.q_pos),
          spans(b.spans),
          overrides(b.overrides),
          seqs(b.seqs),
          q(b.q),
          out(size_t(b.out_size())),
          inv_freq(b.inv_freq),
          table(b.table),
          k(b.k),
          v(b.v) {}
};

inline kernels::RopeParams rope_params(const HostBatch& b, const float* inv_freq, const float* table) {
    return {inv_freq,
            b.rope.rotary_dims,
            b.rope.neox,
            b.rope.position_scale,
            b.rope.table_positions > 0 ? table : nullptr,
            b.rope.table_positions};
}

inline backend::cuda::CudaAttentionParams device_params(const HostBatch& b, const DeviceBatch& d, bool keys_rotated) {
    backend::cuda::CudaAttentionParams p{};
    p.q = d.q.get();
    p.q_pos = d.q_pos.get();
    p.out = d.out.get();
    p.k_cache = d.k.get();
    p.v_cache = d.v.get();
    p.block_ids = d.block_ids.get();
    p.spans = d.spans.get();
    p.overrides = b.overrides.empty() ? nullptr : d.overrides.get();
    p.seqs = d.seqs.get();
    p.num_seqs = int32_t(b.seqs.size());
    p.num_heads = b.shape.num_heads;
    p.num_kv_heads = b.shape.num_kv_heads;
    p.head_dim = b.shape.head_dim;
    p.block_size = b.shape.block_size;
    p.scale = 1.0f / std::sqrt(float(b.shape.head_dim));
    p.rope = rope_params(b, d.inv_freq.get(), d.table.get());
    p.keys_rotated = keys_rotated;
    p.sliding_window = b.sliding_window;
    p.max_queries_per_seq = b.max_queries;
    p.max_kv_tokens = b.max_kv_tokens;
    p.num_splits = 0;
    return p;
}

// The scalar reference on the bf16 cache values; returns [rows, num_heads, head_dim].
inline std::vector<float> reference_output(const HostBatch& b, bool keys_rotated) {
    const std::vector<float> k = from_bf16(b.k), v = from_bf16(b.v);
    std::vector<float> out(size_t(b.out_size()), 0.0f);
    kernels::AttentionParams p{};
    p.q = b.q.data();
    p.q_pos = b.q_pos.data();
    p.out = out.data();
    p.k_cache = k.data();
    p.v_cache = v.data();
    p.block_ids = b.block_ids.data();
    p.spans = b.spans.data();
    p.overrides = b.overrides.empty() ? nullptr : b.overrides.data();
    p.seqs = b.seqs.data();
    p.num_seqs = int32_t(b.seqs.size());
    p.num_heads = b.shape.num_heads;
    p.num_kv_heads = b.shape.num_kv_heads;
    p.head_dim = b.shape.head_dim;
    p.block_size = b.shape.block_size;
    p.scale = 1.0f / std::sqrt(float(b.shape.head_dim));
    p.rope = rope_params(b, b.inv_freq.data(), b.table.data());
    p.keys_rotated = keys_rotated;
    p.sliding_window = b.sliding_window;
    reference_attention(p);
    return out;
}

}  // namespace lazyattn::cuda_test
