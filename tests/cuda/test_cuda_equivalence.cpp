// The backbone equivalence on the GPU: lazy, lazy-k and block-attn compute the same attention.
// One set of raw K/V rows is stored three ways by the CUDA ops themselves: rotated at the stored
// positions (lazy: segments from 0, the tail at its logical positions), raw (lazy-k), and the lazy
// cache with every segment copied and re-rotated by its delta (block-attn, then delta 0). Prefill
// over the tails and decode of each sequence's last row must agree across the three modes, with
// the scalar reference on the raw bf16 keys, and decode with prefill's last row.
//
// Tolerance: atol 6e-3, rtol 2e-2 (the prefill tolerance of test_cuda_attention.cpp): lazy and
// block-attn read keys rounded to bf16 after rotation where lazy-k rotates the rounded raw key,
// and prefill rounds Q and P to bf16.
#include <random>

#include "attention_test_batch.h"
#include "backend/cuda/kv_copy_rotate.h"
#include "backend/cuda/kv_store.h"

namespace lazyattn::cuda_test {
namespace {

constexpr double kAtol = 6e-3, kRtol = 2e-2;

struct ModeOutputs {
    std::vector<float> prefill, decode;
};

// (head_dim, num_heads, num_kv_heads, neox, table_positions)
using EquivParam = std::tuple<int, int, int, bool, int>;

class CudaEquivalenceTest : public CudaTest, public ::testing::WithParamInterface<EquivParam> {
protected:
    // Runs prefill over all rows of `b` and decode of each sequence's last row.
    ModeOutputs run(const HostBatch& b, const DeviceBatch& d, const bf16* k, const bf16* v, const int32_t* block_ids,
                    const kernels::AttentionSpan* spans, bool keys_rotated) {
        ModeOutputs o;
        auto p = device_params(b, d, keys_rotated);
        p.k_cache = k;
        p.v_cache = v;
        p.block_ids = block_ids;
        p.spans = spans;
        EXPECT_TRUE(backend().attention_prefill(p).ok());
        EXPECT_TRUE(backend().synchronize().ok());
        o.prefill = d.out.download();

        std::vector<kernels::AttentionSeq> seqs = b.seqs;
        std::vector<int32_t> rows;
        for (auto& s : seqs) {
            rows.push_back(s.query_start + s.num_queries - 1);
            s.query_start = rows.back();
            s.num_queries = 1;
        }
        DeviceBuffer<kernels::AttentionSeq> dseqs(seqs);
        p.seqs = dseqs.get();
        p.max_queries_per_seq = 1;
        EXPECT_TRUE(backend().attention_decode(p).ok());
        EXPECT_TRUE(backend().synchronize().ok());
        const std::vector<float> all = d.out.download();
        const int64_t row_elems = int64_t(b.shape.num_heads) * b.shape.head_dim;
        for (int32_t r : rows)
            o.decode.insert(o.decode.end(), all.begin() + r * row_elems, all.begin() + (r + 1) * row_elems);
        return o;
    }
};

TEST_P(CudaEquivalenceTest, LazyEqualsLazyKEqualsBlockAttn) {
    const auto [head_dim, param_heads, param_kv_heads, neox, table_positions] = GetParam();
    // The CPU emulator keeps the GQA ratio with one KV head (it runs every thread of every CTA).
    const int num_kv_heads = is_emulated() ? 1 : param_kv_heads;
    const int num_heads = param_heads / param_kv_heads * num_kv_heads;
    std::mt19937_64 rng(testing::test_seed() * 13 + head_dim + num_heads * 7 + neox + table_positions);
    const RopeSpec rope{neox, 0, 1.0f, table_positions};
    const std::vector<SeqSpec> specs = {{{300, 17, 1}, 20, 20}, {{16, 15}, 17, 17}, {{}, 5, 5}};
    const HostBatch b = make_batch({num_heads, num_kv_heads, head_dim}, rope, specs, rng);
    DeviceBatch d(b);
    const int32_t bs = b.shape.block_size, kvh = num_kv_heads, dim = head_dim;

    // Every cached token: its slot and the position lazy stores its key at.
    std::vector<int32_t> slots, stored_pos;
    for (const auto& span : b.spans) {
        for (int32_t t = 0; t < span.num_tokens; ++t) {
            slots.push_back(b.block_ids[span.block_offset + t / bs] * bs + t % bs);
            stored_pos.push_back(span.stored_base + t);
        }
    }
    const int32_t n = int32_t(slots.size());
    DeviceBuffer<float> k_rows(testing::random_floats(rng, size_t(n) * kvh * dim));
    DeviceBuffer<float> v_rows(testing::random_floats(rng, size_t(n) * kvh * dim));
    DeviceBuffer<int32_t> dslots(slots), dpos(stored_pos);
    const kernels::RopeParams rp = rope_params(b, d.inv_freq.get(), d.table.get());

    // lazy: keys rotated at their stored positions (d.k / d.v); lazy-k: raw keys.
    backend::cuda::KvStoreParams sp{k_rows.get(), v_rows.get(), dslots.get(), dpos.get(), d.k.get(), d.v.get(), n,
                                    kvh,          dim,          bs,           rp};
    LA_ASSERT_OK(backend().kv_store(sp));
    DeviceBuffer<bf16> k_raw(b.k), v_raw(b.v);
    sp.rope_positions = nullptr;
    sp.k_cache = k_raw.get();
    sp.v_cache = v_raw.get();
    LA_ASSERT_OK(backend().kv_store(sp));

    // block-attn: the lazy cache plus one fresh block per segment block, re-rotated by delta.
    const int64_t block_elems = int64_t(kvh) * bs * dim;
    int32_t extra = 0;
    for (size_t s = 0; s < b.seqs.size(); ++s) {
        for (int32_t si = b.seqs[s].span_begin; si + 1 < b.seqs[s].span_end; ++si)
            extra += (b.spans[si].num_tokens + bs - 1) / bs;
    }
    const int32_t total_blocks = b.num_blocks + extra;
    DeviceBuffer<bf16> k_blk(size_t(total_blocks * block_elems)), v_blk(size_t(total_blocks * block_elems));
    LA_ASSERT_OK(backend().synchronize());  // the lazy cache is complete before it is copied
    ASSERT_EQ(cudaMemcpy(k_blk.get(), d.k.get(), b.k.size() * sizeof(bf16), cudaMemcpyDeviceToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(v_blk.get(), d.v.get(), b.v.size() * sizeof(bf16), cudaMemcpyDeviceToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // device-to-device cudaMemcpy is asynchronous
    std::vector<int32_t> blk_ids = b.block_ids;
    std::vector<kernels::AttentionSpan> blk_spans = b.spans;
    int32_t next_block = b.num_blocks;
    for (size_t s = 0; s < b.seqs.size(); ++s) {
        for (int32_t si = b.seqs[s].span_begin; si + 1 < b.seqs[s].span_end; ++si) {
            kernels::AttentionSpan& span = blk_spans[si];
            const int32_t nb = (span.num_tokens + bs - 1) / bs;
            if (nb == 0) continue;
            std::vector<int32_t> src(b.block_ids.begin() + span.block_offset,
                                     b.block_ids.begin() + span.block_offset + nb);
            std::vector<int32_t> dst(nb);
            for (auto& x : dst) x = next_block++;
            DeviceBuffer<int32_t> dsrc(src), ddst(dst);
            const backend::cuda::KvCopyRotateParams cp{k_blk.get(),
                                                       v_blk.get(),
                                                       0,
                                                       1,
                                                       dsrc.get(),
                                                       ddst.get(),
                                                       span.num_tokens,
                                                       kvh,
                                                       dim,
                                                       bs,
                                                       span.logical_start - span.stored_base,
                                                       rp};
            LA_ASSERT_OK(backend().kv_copy_rotate(cp));
            LA_ASSERT_OK(backend().synchronize());
            span.block_offset = int32_t(blk_ids.size());
            blk_ids.insert(blk_ids.end(), dst.begin(), dst.end());
            span.stored_base = span.logical_start;
        }
    }
    DeviceBuffer<int32_t> dblk_ids(blk_ids);
    DeviceBuffer<kernels::AttentionSpan> dblk_spans(blk_spans);

    const ModeOutputs lazy = run(b, d, d.k.get(), d.v.get(), d.block_ids.get(), d.spans.get(), true);
    const ModeOutputs lazy_k = run(b, d, k_raw.get(), v_raw.get(), d.block_ids.get(), d.spans.get(), false);
    const ModeOutputs block = run(b, d, k_blk.get(), v_blk.get(), dblk_ids.get(), dblk_spans.get(), true);

    HostBatch raw = b;
    raw.k = k_raw.download();
    raw.v = v_raw.download();
    const std::vector<float> want = reference_output(raw, false);
    expect_all_close(lazy.prefill, want, kAtol, kRtol, "prefill lazy vs reference");
    expect_all_close(lazy_k.prefill, want, kAtol, kRtol, "prefill lazy-k vs reference");
    expect_all_close(block.prefill, want, kAtol, kRtol, "prefill block-attn vs reference");
    expect_all_close(lazy_k.prefill, lazy.prefill, kAtol, kRtol, "prefill lazy-k vs lazy");
    expect_all_close(block.prefill, lazy.prefill, kAtol, kRtol, "prefill block-attn vs lazy");
    expect_all_close(lazy_k.decode, lazy.decode, kAtol, kRtol, "decode lazy-k vs lazy");
    expect_all_close(block.decode, lazy.decode, kAtol, kRtol, "decode block-attn vs lazy");

    // Decode of the last row equals prefill's last row.
    std::vector<float> prefill_last;
    const int64_t row_elems = int64_t(num_heads) * head_dim;
    for (const auto& s : b.seqs) {
        const int32_t r = s.query_start + s.num_queries - 1;
        prefill_last.insert(prefill_last.end(), want.begin() + r * row_elems, want.begin() + (r + 1) * row_elems);
    }
    expect_all_close(lazy.decode, prefill_last, kAtol, kRtol, "decode lazy vs reference last rows");
    expect_all_close(lazy_k.decode, prefill_last, kAtol, kRtol, "decode lazy-k vs reference last rows");
}

std::string equivalence_param_name(const ::testing::TestParamInfo<EquivParam>& info) {
    const auto& [d, h, kv, neox, table] = info.param;
    char name[80];
    std::snprintf(name, sizeof name, "d%d_h%d_kv%d_%s_table%d", d, h, kv, neox ? "neox" : "interleaved", table);
    return name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaEquivalenceTest,
                         ::testing::Values(EquivParam{128, 32, 8, false, 0}, EquivParam{128, 32, 8, true, 100},
                                           EquivParam{64, 8, 1, false, 400}, EquivParam{64, 4, 4, true, 0}),
                         equivalence_param_name);

}  // namespace
}  // namespace lazyattn::cuda_test
