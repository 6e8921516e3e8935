// Times the CPU backend's decode attention per KV type: one query row per sequence against a
// document of --depth tokens in the pool, the model's head shape (SmolLM2-135M by default: 9
// query heads, 3 KV heads, head_dim 64), lazy layout (keys stored rotated). The types are
// interleaved round by round so machine noise hits them alike; prints a Markdown table: type,
// bytes per token, median us per layer call, GB/s of KV read, time relative to f16.
//   build/tools/bench_attention [--threads 2] [--depth 4096] [--heads 9] [--kv-heads 3]
//                               [--head-dim 64] [--seqs 1] [--reps 31]
// LAZYATTN_CPU_ISA=avx2|scalar caps the kernel set as for the engine.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "kernels/params/attention_params.h"
#include "kernels/params/kv_dtype.h"

using namespace lazyattn;
using kernels::KvDtype;

namespace {

int arg(int argc, char** argv, const char* name, int fallback) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
    }
    return fallback;
}

struct Pool {
    KvDtype type;
    std::vector<uint8_t> k, v;
    std::vector<double> us;
};

}  // namespace

int main(int argc, char** argv) {
    const int threads = arg(argc, argv, "--threads", 2), depth = arg(argc, argv, "--depth", 4096);
    const int heads = arg(argc, argv, "--heads", 9), kv_heads = arg(argc, argv, "--kv-heads", 3);
    const int d = arg(argc, argv, "--head-dim", 64), seqs = arg(argc, argv, "--seqs", 1);
    const int reps = arg(argc, argv, "--reps", 31);
    const int bs = 16, blocks_per_seq = (depth + bs - 1) / bs, num_blocks = blocks_per_seq * seqs;
    const int64_t values = int64_t(num_blocks) * kv_heads * bs * d;

    std::mt19937_64 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> kf(values), vf(values), q(size_t(seqs) * heads * d), out(q.size());
    for (float& x : kf) x = normal(rng);
    for (float& x : vf) x = normal(rng);
    for (float& x : q) x = normal(rng);
    std::vector<Pool> pools;
    for (const KvDtype t : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kQ8_0, KvDtype::kQ4_0, KvDtype::kF32}) {
        Pool p{t,
               std::vector<uint8_t>(size_t(kernels::kv_bytes(t, values))),
               std::vector<uint8_t>(size_t(kernels::kv_bytes(t, values))),
               {}};
        kernels::f32_to_kv(kf.data(), t, p.k.data(), values);
        kernels::f32_to_kv(vf.data(), t, p.v.data(), values);
        pools.push_back(std::move(p));
    }
    // Each sequence: one span of `depth` tokens stored from position 0 at logical position 0, the
    // query at the position after it (its own row is left out: the document dominates).
    std::vector<int32_t> block_ids(num_blocks), q_pos(seqs, depth);
    for (int i = 0; i < num_blocks; ++i) block_ids[i] = i;
    std::shuffle(block_ids.begin(), block_ids.end(), rng);  // pool blocks are scattered
    std::vector<kernels::AttentionSpan> spans;
    std::vector<kernels::AttentionSeq> seq_list;
    for (int s = 0; s < seqs; ++s) {
        spans.push_back({s * blocks_per_seq, depth, 0, 0});
        seq_list.push_back({s, 1, s, s + 1});
    }
    std::vector<float> inv_freq(d / 2);
    for (int i = 0; i < d / 2; ++i) inv_freq[i] = float(std::pow(10000.0, -2.0 * i / d));
    kernels::AttentionParams p{};
    p.q = q.data();
    p.q_pos = q_pos.data();
    p.out = out.data();
    p.block_ids = block_ids.data();
    p.spans = spans.data();
    p.seqs = seq_list.data();
    p.num_seqs = seqs;
    p.num_heads = heads;
    p.num_kv_heads = kv_heads;
    p.head_dim = d;
    p.block_size = bs;
    p.scale = 1.0f / std::sqrt(float(d));
    p.rope = {inv_freq.data(), d, false, 1.0f, nullptr, 0};
    p.keys_rotated = true;
    auto backend = backend::make_cpu_backend(threads);
    for (int r = 0; r < reps + 2; ++r) {
        for (Pool& pool : pools) {
            p.k_cache = pool.k.data();
            p.v_cache = pool.v.data();
            p.k_dtype = p.v_dtype = pool.type;
            const auto t0 = std::chrono::steady_clock::now();
            backend->attention(p);
            const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
            if (r >= 2) pool.us.push_back(us);  // two warm-up rounds
        }
    }
    std::printf("decode attention, %d seq x %d tokens, %d/%d heads, head_dim %d, %d threads, median of %d\n\n", seqs,
                depth, heads, kv_heads, d, threads, reps);
    std::printf("| KV | bytes/token/layer | us per layer | GB/s of KV | time vs f16 |\n|---|---:|---:|---:|---:|\n");
    double f16_us = 0;
    for (Pool& pool : pools) {
        std::sort(pool.us.begin(), pool.us.end());
        const double us = pool.us[pool.us.size() / 2];
        if (pool.type == KvDtype::kF16) f16_us = us;
        const double bytes = 2.0 * kernels::kv_bytes(pool.type, int64_t(kv_heads) * d);
        std::printf("| %s | %.0f | %.1f | %.1f | %.2fx |\n", kernels::kv_dtype_name(pool.type), bytes, us,
                    bytes * depth * seqs / us / 1e3, us / f16_us);
    }
    return 0;
}
