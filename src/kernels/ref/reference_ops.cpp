#include "kernels/ref/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "core/fp16.h"
#include "kernels/ref/dequantize_ref.h"

namespace lazyattn::kernels::ref {

void rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps) {
    for (int64_t r = 0; r < num_rows; ++r) {
        const float* xr = x + r * dim;
        double sum = 0.0;
        for (int64_t i = 0; i < dim; ++i) sum += double(xr[i]) * xr[i];
        const double inv = 1.0 / std::sqrt(sum / double(dim) + eps);
        for (int64_t i = 0; i < dim; ++i) out[r * dim + i] = float(xr[i] * inv * weight[i]);
    }
}

void matmul(const float* x, const float* w, const float* bias, float* y, int64_t num_rows, int64_t in_dim,
            int64_t out_dim) {
    for (int64_t r = 0; r < num_rows; ++r) {
        for (int64_t o = 0; o < out_dim; ++o) {
            double acc = bias ? bias[o] : 0.0;
            for (int64_t i = 0; i < in_dim; ++i) acc += double(x[r * in_dim + i]) * w[o * in_dim + i];
            y[r * out_dim + o] = float(acc);
        }
    }
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const double g = gate[i];
        out[i] = float(g / (1.0 + std::exp(-g)) * up[i]);
    }
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
    constexpr double kSqrt2OverPi = 0.7978845608028654;
    for (int64_t i = 0; i < n; ++i) {
        const double g = gate[i];
        out[i] = float(0.5 * g * (1.0 + std::tanh(kSqrt2OverPi * (g + 0.044715 * g * g * g))) * up[i]);
    }
}

void rope_rotate(const float* in, float* out, double position, int32_t head_dim, const RopeParams& rope) {
    const int32_t half = rope.rotary_dims / 2;
    for (int32_t i = 0; i < head_dim; ++i) out[i] = in[i];
    for (int32_t i = 0; i < half; ++i) {
        const double angle = position * rope.position_scale * double(rope.inv_freq[i]);
        const double c = std::cos(angle) * rope.mscale, s = std::sin(angle) * rope.mscale;
        const int32_t a = rope.neox ? i : 2 * i;
        const int32_t b = rope.neox ? i + half : 2 * i + 1;
        const double x0 = in[a], x1 = in[b];
        out[a] = float(x0 * c - x1 * s);
        out[b] = float(x0 * s + x1 * c);
    }
}

void rope_apply(const RopeApplyParams& p) {
    std::vector<float> tmp(p.head_dim);
    for (int32_t r = 0; r < p.num_rows; ++r) {
        for (int32_t h = 0; h < p.num_heads; ++h) {
            float* x = p.x + (int64_t(r) * p.num_heads + h) * p.head_dim;
            rope_rotate(x, tmp.data(), p.positions[r], p.head_dim, p.rope);
            for (int32_t i = 0; i < p.head_dim; ++i) x[i] = tmp[i];
        }
    }
}

namespace {

// Key or value t of a span for KV head kvh, widened to fp32 in `row` ([head_dim]). Written from
// the element types' definitions: the quantized rows through the GGUF block dequantizer
// (dequantize_ref.cpp), not kernels/params/kv_dtype.h's conversion that the kernels use.
const float* cache_row(const void* cache, KvDtype dtype, const AttentionParams& p, const AttentionSpan& span, int32_t t,
                       int32_t kvh, std::vector<float>& row) {
    // A private row where the span overrides t (sparse recompute), else the shared one; a plain
    // scan, not the kernels' search (kernels::span_override_slot), so a slip there shows here.
    int32_t own = -1;
    for (int32_t i = 0; p.overrides != nullptr && i < span.override_count; ++i) {
        if (p.overrides[span.override_begin + i].token == t) own = p.overrides[span.override_begin + i].slot;
    }
    const int32_t block = own >= 0 ? own / p.block_size : p.block_ids[span.block_offset + t / p.block_size];
    const int32_t slot = own >= 0 ? own % p.block_size : t % p.block_size;
    const int64_t index = p.cache_offset(block, kvh) + int64_t(slot) * p.head_dim;
    row.resize(p.head_dim);
    if (dtype == KvDtype::kQ8_0 || dtype == KvDtype::kQ4_0) {
        const int64_t row_bytes = p.head_dim / 32 * (dtype == KvDtype::kQ8_0 ? 34 : 18);
        const auto* src = static_cast<const uint8_t*>(cache) + index / p.head_dim * row_bytes;
        const Status st =
            dequantize_row(dtype == KvDtype::kQ8_0 ? GgmlType::kQ8_0 : GgmlType::kQ4_0, src, row.data(), p.head_dim);
        LA_CHECK(st.ok());
        return row.data();
    }
    for (int32_t i = 0; i < p.head_dim; ++i) {
        switch (dtype) {
            case KvDtype::kF32:
                row[i] = static_cast<const float*>(cache)[index + i];
                break;
            case KvDtype::kF16:
                row[i] = fp16_to_fp32(static_cast<const uint16_t*>(cache)[index + i]);
                break;
            case KvDtype::kBF16:
                row[i] = bf16_to_fp32(static_cast<const uint16_t*>(cache)[index + i]);
                break;
            default:
                LA_CHECK(false);
        }
    }
    return row.data();
}

// Sliding window, written from its definition (not through the span rule of
// kernels/params/attention_params.h, which the optimized kernels use): the key at logical
// position k is hidden from the query at p when p - k >= window.
bool masked_by_window(const AttentionParams& p, const AttentionSpan& span, int32_t t, int32_t pos) {
    return p.sliding_window > 0 && int64_t(pos) - (int64_t(span.logical_start) + t) >= p.sliding_window;
}

}  // namespace

namespace {

// An independent statement of the span rule (docs/design.md §2): causality, the window and
// the query's rotation p - (logical_start - stored_base) are spelled out here rather than taken
// from AttentionSpan::delta / span_visible_range, so that a mistake there shows up as a
// difference between the kernels and this reference instead of being shared by both.
// Calls visit(span index, token, weight) for every key the row's head `h` sees, in span order,
// with its softmax weight (two-pass, in double); returns whether it sees any.
template <typename Visit>
bool for_each_key_weight(const AttentionParams& p, const AttentionSeq& seq, int32_t row, int32_t h, Visit&& visit) {
    const int32_t d = p.head_dim;
    const int32_t kvh = h / (p.num_heads / p.num_kv_heads);
    const int32_t pos = p.q_pos[row];
    const float* q = p.q + (int64_t(row) * p.num_heads + h) * d;
    std::vector<float> qrot(d), krot(d), krow;
    std::vector<double> scores;
    double max_score = -std::numeric_limits<double>::infinity();
    for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
        const AttentionSpan& span = p.spans[si];
        const int32_t delta = span.logical_start - span.stored_base;
        rope_rotate(q, qrot.data(), p.keys_rotated ? pos - delta : pos, d, p.rope);
        for (int32_t t = 0; t < span.num_tokens && span.logical_start + t <= pos; ++t) {
            if (masked_by_window(p, span, t, pos)) continue;
            const float* k = cache_row(p.k_cache, p.k_dtype, p, span, t, kvh, krow);
            if (!p.keys_rotated) {
                rope_rotate(k, krot.data(), span.logical_start + t, d, p.rope);
                k = krot.data();
            }
            double dot = 0.0;
            for (int32_t i = 0; i < d; ++i) dot += double(qrot[i]) * k[i];
            scores.push_back(dot * p.scale * span.logit_scale + span.logit_bias);
            if (scores.back() > max_score) max_score = scores.back();
        }
    }
    double denom = 0.0;
    for (double& sc : scores) denom += (sc = std::exp(sc - max_score));
    size_t k_index = 0;
    for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
        const AttentionSpan& span = p.spans[si];
        for (int32_t t = 0; t < span.num_tokens && span.logical_start + t <= pos; ++t) {
            if (masked_by_window(p, span, t, pos)) continue;
            visit(si, t, scores[k_index++] / denom);
        }
    }
    return !scores.empty();
}

}  // namespace

void attention(const AttentionParams& p) {
    const int32_t d = p.head_dim;
    const int32_t group = p.num_heads / p.num_kv_heads;
    std::vector<float> vrow;
    std::vector<double> acc(d);
    for (int32_t s = 0; s < p.num_seqs; ++s) {
        const AttentionSeq& seq = p.seqs[s];
        for (int32_t qi = 0; qi < seq.num_queries; ++qi) {
            const int32_t row = seq.query_start + qi;
            for (int32_t h = 0; h < p.num_heads; ++h) {
                std::fill(acc.begin(), acc.end(), 0.0);
                const bool any = for_each_key_weight(p, seq, row, h, [&](int32_t si, int32_t t, double w) {
                    const float* v = cache_row(p.v_cache, p.v_dtype, p, p.spans[si], t, h / group, vrow);
                    for (int32_t i = 0; i < d; ++i) acc[i] += w * v[i];
                });
                float* out = p.out + (int64_t(row) * p.num_heads + h) * d;
                for (int32_t i = 0; i < d; ++i) out[i] = any ? float(acc[i]) : 0.0f;
            }
        }
    }
}

void attention_mass(const AttentionParams& p, float* mass) {
    std::vector<int64_t> offset;  // of each span of each sequence, in mass
    int64_t total = 0;
    for (int32_t s = 0; s < p.num_seqs; ++s) {
        for (int32_t si = p.seqs[s].span_begin; si < p.seqs[s].span_end; ++si) {
            offset.push_back(total);
            total += std::max(0, p.spans[si].num_tokens);
        }
    }
    std::vector<double> sum(size_t(total), 0.0);
    size_t first_span = 0;
    for (int32_t s = 0; s < p.num_seqs; ++s) {
        const AttentionSeq& seq = p.seqs[s];
        for (int32_t qi = 0; qi < seq.num_queries; ++qi) {
            for (int32_t h = 0; h < p.num_heads; ++h) {
                for_each_key_weight(p, seq, seq.query_start + qi, h, [&](int32_t si, int32_t t, double w) {
                    sum[size_t(offset[first_span + size_t(si - seq.span_begin)] + t)] += w;
                });
            }
        }
        first_span += size_t(seq.span_end - seq.span_begin);
    }
    for (int64_t i = 0; i < total; ++i) mass[i] = float(sum[size_t(i)]);
}

void apply_token_bitmask(float* logits, int64_t num_rows, int32_t vocab_size, const int32_t* bitmask,
                         int32_t bitmask_words) {
    for (int64_t r = 0; r < num_rows; ++r) {
        float* row = logits + r * vocab_size;
        const int32_t* words = bitmask + r * bitmask_words;
        for (int32_t i = 0; i < vocab_size; ++i) {
            const bool allowed = i / 32 < bitmask_words && ((uint32_t(words[i / 32]) >> (i % 32)) & 1u) != 0;
            if (!allowed) row[i] = -std::numeric_limits<float>::infinity();
        }
    }
}

}  // namespace lazyattn::kernels::ref
