// The CUDA element-wise and KV ops against their scalar references on fresh random inputs:
// RoPE apply, KV store (with and without rotation), block-attn copy-and-re-rotate, RMSNorm,
// SwiGLU and the embedding gather. RoPE, RMSNorm and SwiGLU run the shapes every backend is
// checked on (op_cases.h).
//
// Tolerances (|got - want| <= atol + rtol * |want|):
//   fp32 outputs: RoPE atol rope_atol(max |input|) (cuda_test_util.h: __sincosf's documented
//                 error, 2^-21.41, which the emulator adds, and the float angle; 2e-6 for inputs
//                 in [-1, 1]); RMSNorm, SwiGLU rtol 2e-6 + atol 1e-6.
//   bf16 outputs: rtol 2^-6 (two bf16 ulps) + atol 1e-6, or rope_atol for rotated keys: the
//                 kernel rounds an fp32 value within that atol of the reference's, so it may land
//                 on the neighbouring bf16 (one ulp, up to 2^-7 relative); a wrong rotation or
//                 slot is off by far more.
//   exact: values copied or converted without arithmetic (KV store without RoPE, V in the block
//          copy, the embedding gather) and every slot or block an op must not touch.
#include <numeric>
#include <random>

#include "backend/cuda/kv_copy_rotate.h"
#include "backend/cuda/kv_store.h"
#include "cuda_test_util.h"
#include "op_cases.h"

namespace lazyattn::cuda_test {
namespace {

constexpr double kBf16Rtol = 1.0 / 64.0;  // two bf16 ulps

TEST(CudaTestPolicy, RequireGpuEnvironmentVariable) {
    EXPECT_FALSE(gpu_required(nullptr));
    EXPECT_FALSE(gpu_required(""));
    EXPECT_FALSE(gpu_required("0"));
    EXPECT_TRUE(gpu_required("1"));
    EXPECT_TRUE(gpu_required("yes"));
}

// The RoPE shapes and row counts every backend is checked on (op_cases.h); positions past the
// table (1000 of them) and far past the context lengths the CPU test uses.
using testing::op_cases::RopeShape;
class CudaRopeTest : public CudaTest, public ::testing::WithParamInterface<RopeShape> {};

TEST_P(CudaRopeTest, RopeApplyMatchesReference) {
    const auto [head_dim, num_heads, neox, divisor, with_table] = GetParam();
    std::mt19937_64 rng(testing::test_seed() + head_dim * 3 + num_heads + neox * 7 + divisor + with_table);
    const int rotary = head_dim / divisor;
    const std::vector<float> inv_freq = rope_inv_freq(rotary, 500000.0);
    const float position_scale = with_table ? 0.25f : 1.0f;
    const std::vector<float> table = with_table ? rope_table(inv_freq, position_scale, 1000) : std::vector<float>{};
    DeviceBuffer<float> dfreq(inv_freq), dtable(table);
    for (const int rows : testing::op_cases::rope_rows()) {
        std::vector<int32_t> pos(rows);
        for (auto& x : pos) x = int32_t(rng() % 131072);
        pos[0] = int32_t(rng() % 1000);  // inside the table
        std::vector<float> x = testing::random_floats(rng, size_t(rows) * num_heads * head_dim);
        DeviceBuffer<float> dx(x);
        DeviceBuffer<int32_t> dpos(pos);
        kernels::RopeParams rope{
            dfreq.get(), rotary, neox, position_scale, with_table ? dtable.get() : nullptr, with_table ? 1000 : 0};
        LA_ASSERT_OK(backend().rope_apply({dx.get(), dpos.get(), rows, num_heads, head_dim, rope}));
        LA_ASSERT_OK(backend().synchronize());
        rope.inv_freq = inv_freq.data();
        rope.cos_sin_table = nullptr;
        rope.table_positions = 0;
        kernels::ref::rope_apply({x.data(), pos.data(), rows, num_heads, head_dim, rope});
        expect_all_close(dx.download(), x, rope_atol(1.0), 0.0, "rope_apply rows " + std::to_string(rows));
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaRopeTest, ::testing::ValuesIn(testing::op_cases::rope_shapes()));

// (num_kv_heads, head_dim, rotate)
using StoreParam = std::tuple<int, int, bool>;
class CudaKvStoreTest : public CudaTest, public ::testing::WithParamInterface<StoreParam> {};

TEST_P(CudaKvStoreTest, StoresRowsIntoTheirSlotsOnly) {
    const auto [num_kv_heads, head_dim, rotate] = GetParam();
    std::mt19937_64 rng(testing::test_seed() + num_kv_heads * 5 + head_dim + rotate);
    const int bs = 16, num_blocks = 9;
    const int64_t cache_elems = int64_t(num_blocks) * num_kv_heads * bs * head_dim;
    const std::vector<float> inv_freq = rope_inv_freq(head_dim);
    DeviceBuffer<float> dfreq(inv_freq);
    for (int rows : {1, 17, 99}) {
        std::vector<int32_t> all_slots(num_blocks * bs);
        std::iota(all_slots.begin(), all_slots.end(), 0);
        std::shuffle(all_slots.begin(), all_slots.end(), rng);
        std::vector<int32_t> slots(all_slots.begin(), all_slots.begin() + rows);
        if (rows > 1) slots[1] = -1;  // skipped row
        std::vector<int32_t> pos(rows);
        for (auto& p : pos) p = int32_t(rng() % 5000);
        const auto k_rows = testing::random_floats(rng, size_t(rows) * num_kv_heads * head_dim, -3.0f, 3.0f);
        const auto v_rows = testing::random_floats(rng, k_rows.size(), -3.0f, 3.0f);
        const std::vector<bf16> init = to_bf16(testing::random_floats(rng, size_t(cache_elems)));
        DeviceBuffer<bf16> kc(init), vc(init);
        DeviceBuffer<float> dk(k_rows), dv(v_rows);
        DeviceBuffer<int32_t> dslots(slots), dpos(pos);
        const kernels::RopeParams rope{dfreq.get(), head_dim, num_kv_heads % 2 == 0, 1.0f, nullptr, 0};
        LA_ASSERT_OK(backend().kv_store({dk.get(), dv.get(), dslots.get(), rotate ? dpos.get() : nullptr, kc.get(),
                                         vc.get(), rows, num_kv_heads, head_dim, bs, rope}));
        LA_ASSERT_OK(backend().synchronize());

        // Reference: rotate on the host (double), then scatter with a round to bf16.
        std::vector<float> k_ref = k_rows;
        if (rotate) {
            kernels::RopeParams hr = rope;
            hr.inv_freq = inv_freq.data();
            kernels::ref::rope_apply({k_ref.data(), pos.data(), rows, num_kv_heads, head_dim, hr});
        }
        std::vector<float> want_k = from_bf16(init), want_v = from_bf16(init);
        for (int r = 0; r < rows; ++r) {
            if (slots[r] < 0) continue;
            for (int h = 0; h < num_kv_heads; ++h) {
                for (int d = 0; d < head_dim; ++d) {
                    const int64_t dst =
                        ((int64_t(slots[r] / bs) * num_kv_heads + h) * bs + slots[r] % bs) * head_dim + d;
                    const int64_t src = (int64_t(r) * num_kv_heads + h) * head_dim + d;
                    want_k[dst] = from_bf16(to_bf16(k_ref[src]));
                    want_v[dst] = from_bf16(to_bf16(v_rows[src]));
                }
            }
        }
        expect_all_close(from_bf16(kc.download()), want_k, rotate ? rope_atol(3.0) : 0.0, rotate ? kBf16Rtol : 0.0,
                         "kv_store keys rows " + std::to_string(rows));
        expect_all_close(from_bf16(vc.download()), want_v, 0.0, 0.0, "kv_store values rows " + std::to_string(rows));
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaKvStoreTest,
                         ::testing::Values(StoreParam{1, 64, false}, StoreParam{8, 128, true}, StoreParam{3, 64, true},
                                           StoreParam{8, 128, false}));

// (num_kv_heads, head_dim, num_tokens, delta)
using CopyParam = std::tuple<int, int, int, int>;
class CudaKvCopyTest : public CudaTest, public ::testing::WithParamInterface<CopyParam> {};

TEST_P(CudaKvCopyTest, CopiesAndReRotatesKeys) {
    const auto [num_kv_heads, head_dim, num_tokens, delta] = GetParam();
    std::mt19937_64 rng(testing::test_seed() + num_kv_heads + head_dim + num_tokens * 3 + delta);
    const int bs = 16, layers = 2;
    const int nb = (num_tokens + bs - 1) / bs;
    const int num_blocks = 2 * nb + 2;
    const int64_t block_elems = int64_t(num_kv_heads) * bs * head_dim;
    const int64_t layer_elems = num_blocks * block_elems;
    std::vector<int32_t> perm(num_blocks);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const std::vector<int32_t> src(perm.begin(), perm.begin() + nb), dst(perm.begin() + nb, perm.begin() + 2 * nb);
    const std::vector<bf16> k0 = to_bf16(testing::random_floats(rng, size_t(layers * layer_elems)));
    const std::vector<bf16> v0 = to_bf16(testing::random_floats(rng, k0.size()));
    DeviceBuffer<bf16> kc(k0), vc(v0);
    DeviceBuffer<int32_t> dsrc(src), ddst(dst);
    const std::vector<float> inv_freq = rope_inv_freq(head_dim);
    DeviceBuffer<float> dfreq(inv_freq);
    const kernels::RopeParams rope{dfreq.get(), head_dim, head_dim == 128, 1.0f, nullptr, 0};
    LA_ASSERT_OK(backend().kv_copy_rotate({kc.get(), vc.get(), layer_elems, layers, dsrc.get(), ddst.get(), num_tokens,
                                           num_kv_heads, head_dim, bs, delta, rope}));
    LA_ASSERT_OK(backend().synchronize());

    std::vector<float> want_k = from_bf16(k0), want_v = from_bf16(v0);
    kernels::RopeParams hr = rope;
    hr.inv_freq = inv_freq.data();
    std::vector<float> tmp(head_dim);
    for (int l = 0; l < layers; ++l) {
        for (int t = 0; t < num_tokens; ++t) {
            for (int h = 0; h < num_kv_heads; ++h) {
                const int64_t off = int64_t(h) * bs * head_dim + int64_t(t % bs) * head_dim;
                const int64_t s = l * layer_elems + src[t / bs] * block_elems + off;
                const int64_t d = l * layer_elems + dst[t / bs] * block_elems + off;
                kernels::ref::rope_rotate(&want_k[s], tmp.data(), delta, head_dim, hr);
                for (int e = 0; e < head_dim; ++e) {
                    want_k[d + e] = from_bf16(to_bf16(tmp[e]));
                    want_v[d + e] = want_v[s + e];
                }
            }
        }
    }
    expect_all_close(from_bf16(kc.download()), want_k, delta != 0 ? rope_atol(1.0) : 0.0, delta != 0 ? kBf16Rtol : 0.0,
                     "copy-rotate keys");
    expect_all_close(from_bf16(vc.download()), want_v, 0.0, 0.0, "copy-rotate values");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaKvCopyTest,
                         ::testing::Values(CopyParam{1, 64, 1, 5}, CopyParam{8, 128, 15, 1000},
                                           CopyParam{8, 128, 16, 0}, CopyParam{2, 64, 17, 77},
                                           CopyParam{8, 128, 300, 4096}));

TEST_F(CudaTest, RmsNormMatchesReference) {
    std::mt19937_64 rng(testing::test_seed() + 1);
    for (const auto [rows, dim] : testing::op_cases::norm_shapes()) {
        const auto x = testing::random_floats(rng, size_t(rows * dim), -3.0f, 3.0f);
        const auto w = testing::random_floats(rng, size_t(dim), 0.5f, 1.5f);
        std::vector<float> want(x.size());
        kernels::ref::rmsnorm(x.data(), w.data(), want.data(), rows, dim, 1e-5f);
        DeviceBuffer<float> dx(x), dw(w), out(x.size());
        DeviceBuffer<bf16> out16(x.size());
        LA_ASSERT_OK(backend().rmsnorm(dx.get(), dw.get(), out.get(), rows, dim, 1e-5f));
        LA_ASSERT_OK(backend().rmsnorm(dx.get(), dw.get(), out16.get(), rows, dim, 1e-5f));
        LA_ASSERT_OK(backend().synchronize());
        const std::string what = "rmsnorm " + std::to_string(rows) + "x" + std::to_string(dim);
        expect_all_close(out.download(), want, 1e-6, 2e-6, what + " fp32");
        expect_all_close(from_bf16(out16.download()), want, 1e-6, kBf16Rtol, what + " bf16");
    }
}

TEST_F(CudaTest, SwigluMatchesReference) {
    std::mt19937_64 rng(testing::test_seed() + 2);
    for (const int64_t n : testing::op_cases::glu_sizes()) {
        const auto gate = testing::random_floats(rng, size_t(n), -8.0f, 8.0f);
        const auto up = testing::random_floats(rng, size_t(n), -2.0f, 2.0f);
        std::vector<float> want(static_cast<size_t>(n));
        kernels::ref::swiglu(gate.data(), up.data(), want.data(), n);
        DeviceBuffer<float> dg(gate), du(up), out(static_cast<size_t>(n));
        DeviceBuffer<bf16> out16(static_cast<size_t>(n));
        LA_ASSERT_OK(backend().swiglu(dg.get(), du.get(), out.get(), n));
        LA_ASSERT_OK(backend().swiglu(dg.get(), du.get(), out16.get(), n));
        LA_ASSERT_OK(backend().synchronize());
        expect_all_close(out.download(), want, 1e-6, 2e-6, "swiglu fp32 n " + std::to_string(n));
        expect_all_close(from_bf16(out16.download()), want, 1e-6, kBf16Rtol, "swiglu bf16 n " + std::to_string(n));
        // In place (out aliases gate).
        LA_ASSERT_OK(backend().swiglu(dg.get(), du.get(), dg.get(), n));
        LA_ASSERT_OK(backend().synchronize());
        expect_all_close(dg.download(), want, 1e-6, 2e-6, "swiglu in place n " + std::to_string(n));
    }
}

TEST_F(CudaTest, EmbeddingGathersRows) {
    std::mt19937_64 rng(testing::test_seed() + 3);
    const int64_t vocab = 1000;
    for (int64_t dim : {15, 4096}) {
        const auto table = testing::random_floats(rng, size_t(vocab * dim));
        const std::vector<bf16> table16 = to_bf16(table);
        std::vector<int32_t> ids = {0, 999, -1, 1000, 17, 17};
        for (int i = 0; i < 11; ++i) ids.push_back(int32_t(rng() % vocab));
        const int64_t rows = int64_t(ids.size());
        std::vector<float> want(size_t(rows * dim), 0.0f), want16(want.size(), 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
            if (ids[r] < 0 || ids[r] >= vocab) continue;
            for (int64_t i = 0; i < dim; ++i) {
                want[r * dim + i] = table[ids[r] * dim + i];
                want16[r * dim + i] = from_bf16(table16[ids[r] * dim + i]);
            }
        }
        DeviceBuffer<float> dt(table), out(want.size()), out16(want.size());
        DeviceBuffer<bf16> dt16(table16);
        DeviceBuffer<int32_t> dids(ids);
        LA_ASSERT_OK(backend().embedding(dt.get(), dids.get(), out.get(), rows, dim, vocab));
        LA_ASSERT_OK(backend().embedding(dt16.get(), dids.get(), out16.get(), rows, dim, vocab));
        LA_ASSERT_OK(backend().synchronize());
        expect_all_close(out.download(), want, 0.0, 0.0, "embedding fp32 table");
        expect_all_close(out16.download(), want16, 0.0, 0.0, "embedding bf16 table");
    }
}

}  // namespace
}  // namespace lazyattn::cuda_test
