// Runs once per request that selects by the question, over its tail rows in the probed layers:
// plain fp32 loops the compiler vectorizes, not a tuned kernel. Tasks are (query row, KV head):
// each reads the sequence's keys a block at a time through the span rule (private rows
// included, span_blocks.h), scores them for the group's heads, normalizes, and adds the weights
// to its thread's accumulator; the accumulators are summed at the end, in thread order.
#include "backend/cpu/attention_mass_cpu.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/rope_cpu.h"
#include "backend/cpu/span_blocks.h"

namespace lazyattn::backend::cpu {

void attention_mass(const kernels::AttentionParams& p, float* mass, ThreadPool& pool) {
    struct Task {
        int32_t seq, row, kvh;
    };
    std::vector<int64_t> seq_offset(size_t(p.num_seqs));  // of each sequence's first span in mass
    std::vector<Task> tasks;
    int64_t total = 0;
    for (int32_t s = 0; s < p.num_seqs; ++s) {
        const kernels::AttentionSeq& seq = p.seqs[s];
        seq_offset[size_t(s)] = total;
        for (int32_t si = seq.span_begin; si < seq.span_end; ++si) total += std::max(0, p.spans[si].num_tokens);
        for (int32_t r = 0; r < seq.num_queries; ++r) {
            for (int32_t h = 0; h < p.num_kv_heads; ++h) tasks.push_back({s, seq.query_start + r, h});
        }
    }
    const int32_t d = p.head_dim, bs = p.block_size, group = p.num_heads / p.num_kv_heads;
    std::vector<std::vector<float>> per_thread(size_t(pool.num_threads()));
    std::atomic<size_t> next{0};
    pool.run_on_all([&](int thread, int) {
        std::vector<float>& acc = per_thread[size_t(thread)];
        acc.assign(size_t(total), 0.0f);
        std::vector<float> qrot(size_t(group) * d), kbuf(size_t(bs) * d), krot(kbuf.size()),
            cs(size_t(p.rope.rotary_dims) + 2), scores;
        std::vector<int64_t> where;  // mass index of each scored key
        std::vector<char> patch(span_block_scratch_bytes(bs, d));
        for (size_t i = next++; i < tasks.size(); i = next++) {
            const Task& task = tasks[i];
            const kernels::AttentionSeq& seq = p.seqs[task.seq];
            const int32_t pos = p.q_pos[task.row];
            scores.clear();
            where.clear();
            int64_t offset = seq_offset[size_t(task.seq)];
            for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
                const kernels::AttentionSpan& span = p.spans[si];
                int32_t first, end;
                p.visible_range(span, pos, &first, &end);
                if (first < end) {
                    rope_cos_sin(p.rope, p.query_rope_position(span, pos), cs.data());
                    for (int32_t g = 0; g < group; ++g) {
                        const float* q = p.q + (int64_t(task.row) * p.num_heads + task.kvh * group + g) * d;
                        rope_rotate_with(p.rope, cs.data(), q, qrot.data() + g * d, d);
                        for (int32_t j = 0; j < d; ++j) qrot[size_t(g * d + j)] *= p.scale * span.logit_scale;
                    }
                    for (int32_t t0 = first / bs * bs; t0 < end; t0 += bs) {
                        const int32_t n = std::min(bs, end - t0);
                        const BlockKv raw = span_block_kv(p, span, t0 / bs, n, task.kvh, patch.data());
                        const float* k = rows_f32(raw.k, p.k_dtype, n, d, kbuf.data());
                        if (!p.keys_rotated) {
                            rotate_keys(p.rope, k, krot.data(), n, d, span.key_position(t0), cs.data());
                            k = krot.data();
                        }
                        for (int32_t j = std::max(0, first - t0); j < n; ++j) {
                            where.push_back(offset + t0 + j);
                            for (int32_t g = 0; g < group; ++g) {
                                float dot = 0.0f;
                                const float* qg = qrot.data() + g * d;
                                const float* kj = k + int64_t(j) * d;
#pragma omp simd reduction(+ : dot)
                                for (int32_t e = 0; e < d; ++e) dot += qg[e] * kj[e];
                                scores.push_back(dot + span.logit_bias);
                            }
                        }
                    }
                }
                offset += std::max(0, span.num_tokens);
            }
            // scores: [key][g]; a softmax per head over every key the row sees.
            const size_t keys = where.size();
            for (int32_t g = 0; g < group; ++g) {
                float max_score = -std::numeric_limits<float>::infinity();
                for (size_t k = 0; k < keys; ++k) max_score = std::max(max_score, scores[k * group + g]);
                double denom = 0.0;
                for (size_t k = 0; k < keys; ++k) denom += std::exp(double(scores[k * group + g]) - max_score);
                if (!(denom > 0.0)) continue;
                const double inv = 1.0 / denom;
                for (size_t k = 0; k < keys; ++k) {
                    acc[size_t(where[k])] += float(std::exp(double(scores[k * group + g]) - max_score) * inv);
                }
            }
        }
    });
    std::fill(mass, mass + total, 0.0f);
    for (const std::vector<float>& acc : per_thread) {
        for (int64_t i = 0; i < int64_t(acc.size()); ++i) mass[i] += acc[size_t(i)];
    }
}

}  // namespace lazyattn::backend::cpu
