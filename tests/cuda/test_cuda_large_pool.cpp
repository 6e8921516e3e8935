// KV pools past 2^31 elements per layer, at Llama-3-8B's KV shape (8 KV heads, head_dim 128,
// blocks of 16 tokens: 2^14 elements per block, so block 2^17 starts at element 2^31): the KV
// store, the block-attn copy-and-re-rotate (two layers, the second one past 2^32 from the base)
// and both attention kernels read and write blocks just before and past that boundary, against
// the same references as the small-pool tests, run on compact copies of the blocks touched.
// A 32-bit element index anywhere wraps to the wrong block.
//
// Memory: on a GPU the pools are allocated for real (8.6 GB for store/attention, 17.2 GB for the
// two-layer copy; skipped with the reason where the device has less free). In the emulator,
// allocations this large are sparse (cuda_emulator.h): only the touched blocks take memory.
#include <random>

#include "attention_test_batch.h"
#include "backend/cuda/kv_copy_rotate.h"
#include "backend/cuda/kv_store.h"

namespace lazyattn::cuda_test {
namespace {

constexpr int32_t kHeads = 32, kKvHeads = 8, kHeadDim = 128, kBs = 16;
constexpr int64_t kBlockElems = int64_t(kKvHeads) * kBs * kHeadDim;            // 2^14
constexpr int32_t kBoundaryBlock = int32_t((int64_t(1) << 31) / kBlockElems);  // 2^17
constexpr int32_t kPoolBlocks = kBoundaryBlock + 64;
constexpr int64_t kLayerElems = int64_t(kPoolBlocks) * kBlockElems;  // 2^31 + 2^20
constexpr double kBf16Rtol = 1.0 / 64.0;
constexpr double kDecodeAtol = 5e-5, kDecodeRtol = 5e-4;    // as test_cuda_attention.cpp
constexpr double kPrefillAtol = 6e-3, kPrefillRtol = 2e-2;  // as test_cuda_attention.cpp

static_assert(int64_t(kBoundaryBlock) * kBlockElems == int64_t(1) << 31);

class CudaLargePoolTest : public CudaTest {
protected:
    // Skips (the reason given) when a real device lacks `layers` layers of K and V.
    void require_pool_memory(int layers) {
        if (is_emulated()) return;
        size_t free_bytes = 0, total = 0;
        ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
        const size_t need = size_t(2 * layers) * size_t(kLayerElems) * sizeof(bf16) + (size_t(1) << 30);
        if (free_bytes < need) {
            GTEST_SKIP() << "needs " << need / (1 << 20) << " MiB of device memory, " << free_bytes / (1 << 20)
                         << " MiB free";
        }
    }
};

void upload_block(bf16* pool, int64_t block, const bf16* src) {
    ASSERT_EQ(cudaMemcpy(pool + block * kBlockElems, src, kBlockElems * sizeof(bf16), cudaMemcpyHostToDevice),
              cudaSuccess);
}

std::vector<bf16> download_block(const bf16* pool, int64_t block) {
    std::vector<bf16> out(kBlockElems);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), pool + block * kBlockElems, kBlockElems * sizeof(bf16), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
}

TEST_F(CudaLargePoolTest, AttentionReadsBlocksPastTwoToThe31) {
    require_pool_memory(1);
    if (IsSkipped()) return;
    DeviceBuffer<bf16> k_pool{size_t(kLayerElems)}, v_pool{size_t(kLayerElems)};
    std::mt19937_64 rng(testing::test_seed() + 41);
    struct Case {
        bool prefill;
        bool keys_rotated;
        std::vector<SeqSpec> seqs;
    };
    const Case cases[] = {{false, true, {{{40, 17}, 20, 1}, {{16}, 5, 1}}},
                          {false, false, {{{33}, 9, 1}}},
                          {true, false, {{{33}, 24, 24}}},
                          {true, true, {{{17, 16}, 12, 12}}}};
    for (const Case& c : cases) {
        const HostBatch b = make_batch({kHeads, kKvHeads, kHeadDim, kBs}, {}, c.seqs, rng);
        ASSERT_LE(b.num_blocks, 60);
        const std::vector<float> want = reference_output(b, c.keys_rotated);
        // Compact block i lives at pool block kBoundaryBlock - 3 + i: straddling element 2^31.
        const int32_t base = kBoundaryBlock - 3;
        for (int32_t i = 0; i < b.num_blocks; ++i) {
            upload_block(k_pool.get(), base + i, b.k.data() + i * kBlockElems);
            upload_block(v_pool.get(), base + i, b.v.data() + i * kBlockElems);
        }
        std::vector<int32_t> ids = b.block_ids;
        for (auto& id : ids) id += base;
        DeviceBatch d(b);
        DeviceBuffer<int32_t> far_ids(ids);
        auto p = device_params(b, d, c.keys_rotated);
        p.k_cache = k_pool.get();
        p.v_cache = v_pool.get();
        p.block_ids = far_ids.get();
        const std::string what = std::string(c.prefill ? "prefill" : "decode") + (c.keys_rotated ? " lazy" : " lazy-k");
        if (c.prefill) {
            LA_ASSERT_OK(backend().attention_prefill(p));
        } else {
            p.num_splits = 2;
            LA_ASSERT_OK(backend().attention_decode(p));
        }
        LA_ASSERT_OK(backend().synchronize());
        expect_all_close(d.out.download(), want, c.prefill ? kPrefillAtol : kDecodeAtol,
                         c.prefill ? kPrefillRtol : kDecodeRtol, what + " past 2^31");
    }
}

TEST_F(CudaLargePoolTest, KvStoreWritesSlotsPastTwoToThe31) {
    require_pool_memory(1);
    if (IsSkipped()) return;
    DeviceBuffer<bf16> k_pool{size_t(kLayerElems)}, v_pool{size_t(kLayerElems)};
    std::mt19937_64 rng(testing::test_seed() + 42);
    const std::vector<int32_t> blocks = {kBoundaryBlock - 1, kBoundaryBlock, kBoundaryBlock + 1, kPoolBlocks - 1};
    // (block index into `blocks`, offset): the last slot before 2^31, the first past it, others.
    const std::vector<std::pair<int, int>> targets = {{0, 15}, {1, 0}, {1, 7}, {2, 3}, {3, 15}, {0, 2}};
    const int32_t rows = int32_t(targets.size());
    std::vector<int32_t> slots(rows), pos(rows);
    for (int32_t r = 0; r < rows; ++r) {
        slots[r] = blocks[targets[r].first] * kBs + targets[r].second;
        pos[r] = int32_t(rng() % 8000);
    }
    const auto k_rows = testing::random_floats(rng, size_t(rows) * kKvHeads * kHeadDim, -3.0f, 3.0f);
    const auto v_rows = testing::random_floats(rng, k_rows.size(), -3.0f, 3.0f);
    std::vector<std::vector<bf16>> init;
    for (size_t i = 0; i < blocks.size(); ++i) {
        init.push_back(to_bf16(testing::random_floats(rng, size_t(kBlockElems))));
        upload_block(k_pool.get(), blocks[i], init.back().data());
        upload_block(v_pool.get(), blocks[i], init.back().data());
    }
    const std::vector<float> inv_freq = rope_inv_freq(kHeadDim, 500000.0);
    DeviceBuffer<float> dfreq(inv_freq), dk(k_rows), dv(v_rows);
    DeviceBuffer<int32_t> dslots(slots), dpos(pos);
    const kernels::RopeParams rope{dfreq.get(), kHeadDim, false, 1.0f, nullptr, 0};
    LA_ASSERT_OK(backend().kv_store({dk.get(), dv.get(), dslots.get(), dpos.get(), k_pool.get(), v_pool.get(), rows,
                                     kKvHeads, kHeadDim, kBs, rope}));
    LA_ASSERT_OK(backend().synchronize());

    std::vector<float> k_ref = k_rows;
    kernels::RopeParams hr = rope;
    hr.inv_freq = inv_freq.data();
    kernels::ref::rope_apply({k_ref.data(), pos.data(), rows, kKvHeads, kHeadDim, hr});
    std::vector<std::vector<float>> want_k, want_v;
    for (const auto& b : init) {
        want_k.push_back(from_bf16(b));
        want_v.push_back(from_bf16(b));
    }
    for (int32_t r = 0; r < rows; ++r) {
        const auto [bi, offset] = targets[r];
        for (int h = 0; h < kKvHeads; ++h) {
            for (int e = 0; e < kHeadDim; ++e) {
                const int64_t dst = (int64_t(h) * kBs + offset) * kHeadDim + e;
                const int64_t src = (int64_t(r) * kKvHeads + h) * kHeadDim + e;
                want_k[bi][dst] = from_bf16(to_bf16(k_ref[src]));
                want_v[bi][dst] = from_bf16(to_bf16(v_rows[src]));
            }
        }
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
        const std::string what = "kv_store block " + std::to_string(blocks[i]);
        expect_all_close(from_bf16(download_block(k_pool.get(), blocks[i])), want_k[i], rope_atol(3.0), kBf16Rtol,
                         what + " keys");
        expect_all_close(from_bf16(download_block(v_pool.get(), blocks[i])), want_v[i], 0.0, 0.0, what + " values");
    }
}

TEST_F(CudaLargePoolTest, KvCopyRotateCopiesBlocksPastTwoToThe31) {
    require_pool_memory(2);
    if (IsSkipped()) return;
    const int layers = 2;
    DeviceBuffer<bf16> k_pool{size_t(layers * kLayerElems)}, v_pool{size_t(layers * kLayerElems)};
    std::mt19937_64 rng(testing::test_seed() + 43);
    const int32_t num_tokens = 40, delta = 1000;  // three blocks, the last one partial
    const std::vector<int32_t> src = {kBoundaryBlock - 2, kBoundaryBlock - 1, kBoundaryBlock + 5};
    const std::vector<int32_t> dst = {kBoundaryBlock, kBoundaryBlock + 1, kPoolBlocks - 1};
    // Host images of the touched blocks: [layer][src then dst block] of K and V.
    std::vector<std::vector<bf16>> k_img, v_img;
    for (int l = 0; l < layers; ++l) {
        for (size_t i = 0; i < src.size() + dst.size(); ++i) {
            const int64_t block = l * int64_t(kPoolBlocks) + (i < src.size() ? src[i] : dst[i - src.size()]);
            k_img.push_back(to_bf16(testing::random_floats(rng, size_t(kBlockElems))));
            v_img.push_back(to_bf16(testing::random_floats(rng, size_t(kBlockElems))));
            upload_block(k_pool.get(), block, k_img.back().data());
            upload_block(v_pool.get(), block, v_img.back().data());
        }
    }
    const std::vector<float> inv_freq = rope_inv_freq(kHeadDim);
    DeviceBuffer<float> dfreq(inv_freq);
    DeviceBuffer<int32_t> dsrc(src), ddst(dst);
    const kernels::RopeParams rope{dfreq.get(), kHeadDim, true, 1.0f, nullptr, 0};
    LA_ASSERT_OK(backend().kv_copy_rotate({k_pool.get(), v_pool.get(), kLayerElems, layers, dsrc.get(), ddst.get(),
                                           num_tokens, kKvHeads, kHeadDim, kBs, delta, rope}));
    LA_ASSERT_OK(backend().synchronize());

    kernels::RopeParams hr = rope;
    hr.inv_freq = inv_freq.data();
    std::vector<float> tmp(kHeadDim);
    const size_t per_layer = src.size() + dst.size();
    for (int l = 0; l < layers; ++l) {
        std::vector<std::vector<float>> want_k, want_v;
        for (size_t i = 0; i < dst.size(); ++i) {
            want_k.push_back(from_bf16(k_img[l * per_layer + src.size() + i]));
            want_v.push_back(from_bf16(v_img[l * per_layer + src.size() + i]));
        }
        for (int32_t t = 0; t < num_tokens; ++t) {
            const std::vector<float> sk = from_bf16(k_img[l * per_layer + t / kBs]);
            const std::vector<float> sv_src = from_bf16(v_img[l * per_layer + t / kBs]);
            for (int h = 0; h < kKvHeads; ++h) {
                const int64_t off = (int64_t(h) * kBs + t % kBs) * kHeadDim;
                kernels::ref::rope_rotate(&sk[off], tmp.data(), delta, kHeadDim, hr);
                for (int e = 0; e < kHeadDim; ++e) {
                    want_k[t / kBs][off + e] = from_bf16(to_bf16(tmp[e]));
                    want_v[t / kBs][off + e] = sv_src[off + e];
                }
            }
        }
        for (size_t i = 0; i < dst.size(); ++i) {
            const int64_t block = l * int64_t(kPoolBlocks) + dst[i];
            const std::string what = "copy-rotate layer " + std::to_string(l) + " block " + std::to_string(dst[i]);
            expect_all_close(from_bf16(download_block(k_pool.get(), block)), want_k[i], rope_atol(1.0), kBf16Rtol,
                             what + " keys");
            expect_all_close(from_bf16(download_block(v_pool.get(), block)), want_v[i], 0.0, 0.0, what + " values");
        }
    }
}

}  // namespace
}  // namespace lazyattn::cuda_test
