// The backends' KV memory in every element type (store, block transfer, block-attn's copy and
// re-rotation against the path the scheduler took before the backend owned it), and the bulk
// fp16/bf16 conversions it stores through.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>

#include "backend/backend.h"
#include "backend/host_kv_ops.h"
#include "backend/kv_memory.h"
#include "core/fp16.h"
#include "core/half_convert.h"
#include "core/large_buffer.h"
#include "kernels/ref/reference_ops.h"
#include "random_inputs.h"

namespace lazyattn {
namespace {

using kernels::KvDtype;

// Random values of every magnitude fp16 has (normal, subnormal, overflow), signed zeros, infinities.
std::vector<float> awkward_floats(std::mt19937_64& rng, int64_t n) {
    std::vector<float> x = testing::random_floats(rng, n, -4, 4);
    std::uniform_real_distribution<float> expo(-30.0f, 20.0f);
    for (int64_t i = 0; i < n; i += 3) x[i] *= std::exp2(expo(rng));
    const float specials[] = {0.0f,
                              -0.0f,
                              65504.0f,
                              65520.0f,
                              -1e6f,
                              6e-8f,
                              3e-8f,
                              1e-45f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
    for (size_t i = 0; i < std::size(specials) && i < size_t(n); ++i) x[i * 7 % n] = specials[i];
    return x;
}

TEST(HalfConvert, BulkConversionIsBitIdenticalToScalar) {
    std::mt19937_64 rng(testing::test_seed());
    for (int64_t n : {1, 15, 16, 17, 1000}) {  // vector bodies and scalar tails
        const auto x = awkward_floats(rng, n);
        std::vector<uint16_t> h(n), b(n);
        fp32_to_fp16_n(x.data(), h.data(), n);
        fp32_to_bf16_n(x.data(), b.data(), n);
        std::vector<float> hx(n), bx(n);
        fp16_to_fp32_n(h.data(), hx.data(), n);
        bf16_to_fp32_n(b.data(), bx.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(h[i], fp32_to_fp16(x[i])) << "fp16 of " << x[i];
            ASSERT_EQ(b[i], fp32_to_bf16(x[i])) << "bf16 of " << x[i];
            const float want_h = fp16_to_fp32(h[i]), want_b = bf16_to_fp32(b[i]);
            ASSERT_EQ(std::memcmp(&hx[i], &want_h, 4), 0) << "fp16 " << h[i];
            ASSERT_EQ(std::memcmp(&bx[i], &want_b, 4), 0) << "bf16 " << b[i];
        }
    }
}

TEST(LargeBuffer, ZeroedAlignedAndMovable) {
    for (size_t bytes : {size_t(100), size_t(3) << 20}) {  // heap and mapped
        LargeBuffer b(bytes);
        ASSERT_NE(b.data(), nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (bytes >= (size_t(2) << 20) ? (size_t(2) << 20) : 64), 0u);
        for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(b.data()[i], 0) << i;
        b.data()[bytes - 1] = 7;
        LargeBuffer moved(std::move(b));
        EXPECT_EQ(b.data(), nullptr);
        EXPECT_EQ(moved.size(), bytes);
        EXPECT_EQ(moved.data()[bytes - 1], 7);
        LargeBuffer assigned;
        assigned = std::move(moved);
        EXPECT_EQ(assigned.data()[bytes - 1], 7);
    }
}

float rounded(KvDtype dtype, float x) {
    switch (dtype) {
        case KvDtype::kF16:
            return fp16_to_fp32(fp32_to_fp16(x));
        case KvDtype::kBF16:
            return bf16_to_fp32(fp32_to_bf16(x));
        default:
            return x;
    }
}

// Value i of a 64-value row x as the pool holds it: rounded once, or for q8_0 / q4_0 the row
// quantized on its own (its 32-value groups, never mixed with another row's) and dequantized.
float stored(KvDtype dtype, const float* x, int32_t i) {
    if (!kernels::kv_dtype_quantized(dtype)) return rounded(dtype, x[i]);
    std::vector<uint8_t> q(size_t(kernels::kv_bytes(dtype, 64)));
    float back[64];
    kernels::f32_to_kv(x, dtype, q.data(), 64);
    kernels::kv_to_f32(q.data(), dtype, back, 64);
    return back[i];
}

std::vector<float> read_layer(const backend::KvMemory& kv, bool keys, int32_t layer) {
    std::vector<float> out(size_t(kv.shape().elements_per_layer()));
    kernels::kv_to_f32(keys ? kv.k(layer) : kv.v(layer), keys ? kv.shape().k_dtype : kv.shape().v_dtype, out.data(),
                       int64_t(out.size()));
    return out;
}

TEST(HostKvMemory, AllocateRefusesAPoolLargerThanMemory) {
    kv::KvShape shape{64, 1 << 20, 1, 1024, 1024};  // 2^20 blocks of 512 MiB
    auto memory = backend::HostKvMemory::allocate(shape);
    ASSERT_FALSE(memory.ok());
    EXPECT_EQ(memory.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(memory.status().message().find("MiB"), std::string::npos) << memory.status().message();
    EXPECT_TRUE(backend::HostKvMemory::allocate(kv::KvShape{1, 4, 1, 4, 4}).ok());
    // Through the backends too (what the scheduler calls).
    for (auto& be : {backend::make_cpu_backend(1), backend::make_reference_backend()}) {
        auto refused = be->allocate_kv(shape);
        EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << be->name();
        auto small = be->allocate_kv(kv::KvShape{2, 3, 1, 4, 4, KvDtype::kBF16, KvDtype::kBF16});
        ASSERT_TRUE(small.ok()) << be->name();
        EXPECT_EQ((*small)->shape().num_blocks, 3);
    }
}

class KvMemoryTest : public ::testing::TestWithParam<KvDtype> {};

// Stores rows; every value read back is the stored fp32 value rounded once to the pool's type.
// read_block / write_block move a block of every layer through host memory unchanged.
TEST_P(KvMemoryTest, StoreRoundsOnceAndBlocksMoveThroughHost) {
    const KvDtype dtype = GetParam();
    std::mt19937_64 rng(testing::test_seed() + int(dtype));
    kv::KvShape shape{2, 6, 3, 16, 64, dtype, dtype};
    auto be = backend::make_cpu_backend(1);
    auto memory = be->allocate_kv(shape);
    ASSERT_TRUE(memory.ok()) << memory.status().to_string();
    backend::KvMemory& kv = **memory;
    // Real bytes, scales included: 64 values are 2 blocks of 34 (q8_0) or 18 (q4_0) bytes.
    const int64_t row_bytes = dtype == KvDtype::kF32    ? 256
                              : dtype == KvDtype::kQ8_0 ? 68
                              : dtype == KvDtype::kQ4_0 ? 36
                                                        : 128;
    EXPECT_EQ(shape.bytes_per_block(), 2 * 2 * 3 * 16 * row_bytes);
    const int32_t rows = 20, dim = 3 * 64;
    const auto k = testing::random_floats(rng, rows * dim), v = testing::random_floats(rng, rows * dim);
    std::vector<int32_t> slots(rows);
    for (int32_t r = 0; r < rows; ++r) slots[r] = r < 16 ? 2 * 16 + r : 4 * 16 + (r - 16);  // blocks 2 and 4
    for (int32_t layer = 0; layer < 2; ++layer) be->kv_store(kv, layer, k.data(), v.data(), slots.data(), rows);
    for (int32_t layer = 0; layer < 2; ++layer) {
        const auto keys = read_layer(kv, true, layer), values = read_layer(kv, false, layer);
        for (int32_t r = 0; r < rows; ++r) {
            const int32_t block = slots[r] / 16, t = slots[r] % 16;
            for (int32_t h = 0; h < 3; ++h) {
                for (int32_t i = 0; i < 64; ++i) {
                    const int64_t at = ((int64_t(block) * 3 + h) * 16 + t) * 64 + i;
                    ASSERT_EQ(keys[at], stored(dtype, k.data() + r * dim + h * 64, i))
                        << "layer " << layer << " row " << r;
                    ASSERT_EQ(values[at], stored(dtype, v.data() + r * dim + h * 64, i))
                        << "layer " << layer << " row " << r;
                }
            }
        }
    }
    std::vector<uint8_t> block(size_t(shape.bytes_per_block()));
    EXPECT_TRUE(kv.read_block(2, block.data()).ok());
    EXPECT_TRUE(kv.write_block(5, block.data()).ok());
    std::vector<uint8_t> again(block.size());
    EXPECT_TRUE(kv.read_block(5, again.data()).ok());
    EXPECT_EQ(again, block);
    const int64_t per_block = shape.k_bytes_per_block();
    for (int32_t layer = 0; layer < 2; ++layer) {  // [layer][K, V] as documented
        EXPECT_EQ(std::memcmp(block.data() + 2 * layer * per_block,
                              static_cast<const uint8_t*>(kv.k(layer)) + 2 * per_block, size_t(per_block)),
                  0);
        EXPECT_EQ(std::memcmp(block.data() + (2 * layer + 1) * per_block,
                              static_cast<const uint8_t*>(kv.v(layer)) + 5 * per_block, size_t(per_block)),
                  0);
    }
}

// Block-attn's materialization as the scheduler made it before the backend owned the pool
// (KvStorage::copy_tokens, then per block: keys widened to fp32, rope_apply at delta over every
// row of the block, rounded back), on the raw per-layer arrays.
void old_copy_rotate(backend::KvMemory& kv, const std::vector<int32_t>& src, const std::vector<int32_t>& dst,
                     int32_t num_tokens, int32_t delta, const kernels::RopeParams& rope,
                     const std::function<void(const kernels::RopeApplyParams&)>& rope_apply) {
    const kv::KvShape& s = kv.shape();
    const int32_t d = s.head_dim, bs = s.block_size, nkv = s.num_kv_heads;
    const int64_t n_block = s.elements_per_block();
    const int64_t row = s.k_row_bytes();  // K and V of one type here
    for (int32_t l = 0; l < s.num_layers; ++l) {
        auto* kc = static_cast<uint8_t*>(kv.k(l));
        auto* vc = static_cast<uint8_t*>(kv.v(l));
        for (int32_t b = 0; b * bs < num_tokens; ++b) {
            const int32_t n = std::min(bs, num_tokens - b * bs);
            for (int32_t h = 0; h < nkv; ++h) {
                const int64_t from = ((int64_t(src[b]) * nkv + h) * bs) * row;
                const int64_t to = ((int64_t(dst[b]) * nkv + h) * bs) * row;
                std::memcpy(kc + to, kc + from, size_t(n * row));
                std::memcpy(vc + to, vc + from, size_t(n * row));
            }
        }
    }
    const int32_t rows = nkv * bs;
    std::vector<int32_t> positions(rows, delta);
    std::vector<float> keys(static_cast<size_t>(n_block));
    for (int32_t l = 0; l < s.num_layers; ++l) {
        auto* kc = static_cast<uint8_t*>(kv.k(l));
        for (int32_t b : dst) {
            kernels::kv_to_f32(kc + b * rows * row, s.k_dtype, keys.data(), n_block);
            rope_apply({keys.data(), positions.data(), rows, 1, d, rope});
            kernels::f32_to_kv(keys.data(), s.k_dtype, kc + b * rows * row, n_block);
        }
    }
}

// kv_copy_rotate on the CPU and reference backends gives, on every copied token, bit for bit what
// the old path gave with the same backend's RoPE (and the two backends agree to a rounding of the
// pool's type); values are copied exactly; the source and the rest of the destination are untouched.
TEST_P(KvMemoryTest, CopyRotateMatchesTheOldSchedulerPath) {
    const KvDtype dtype = GetParam();
    const kv::KvShape shape{3, 12, 2, 16, 64, dtype, dtype};
    std::vector<float> inv_freq(24);
    for (int32_t i = 0; i < 24; ++i) inv_freq[i] = float(std::pow(10000.0, -2.0 * i / 48));
    for (bool neox : {false, true}) {
        for (int32_t delta : {123, -5, 0}) {
            // Partial rotary dims (48 of 64), no table: the re-rotation RoPE (mscale 1).
            const kernels::RopeParams rope{inv_freq.data(), 48, neox, 1.0f, nullptr, 0, 1.0f};
            const std::vector<int32_t> src = {5, 2, 9}, dst = {0, 7, 3};
            const int32_t num_tokens = 37;               // the last block partial
            std::vector<std::vector<float>> results[2];  // per backend: K then V of every layer
            int which = 0;
            for (auto& be : {backend::make_cpu_backend(2), backend::make_reference_backend()}) {
                SCOPED_TRACE(be->name() + (neox ? " neox" : " normal") + " delta " + std::to_string(delta));
                auto a = be->allocate_kv(shape), b = be->allocate_kv(shape);
                ASSERT_TRUE(a.ok() && b.ok());
                std::mt19937_64 fill(testing::test_seed() + 99);  // the same random pool in both
                for (int32_t l = 0; l < shape.num_layers; ++l) {
                    for (bool keys : {true, false}) {
                        const auto x = testing::random_floats(fill, size_t(shape.elements_per_layer()), -2, 2);
                        for (auto* kv : {a->get(), b->get()}) {
                            kernels::f32_to_kv(x.data(), dtype, keys ? kv->k(l) : kv->v(l), int64_t(x.size()));
                        }
                    }
                }
                backend::Backend* bep = be.get();
                old_copy_rotate(**a, src, dst, num_tokens, delta, rope,
                                [bep](const kernels::RopeApplyParams& p) { bep->rope_apply(p); });
                std::vector<std::vector<float>> before;
                for (int32_t l = 0; l < shape.num_layers; ++l) {
                    before.push_back(read_layer(**b, true, l));
                    before.push_back(read_layer(**b, false, l));
                }
                for (int32_t l = 0; l < shape.num_layers; ++l) {
                    be->kv_copy_rotate(**b, l, {src.data(), dst.data(), num_tokens, delta, rope});
                }
                be->synchronize();
                for (int32_t l = 0; l < shape.num_layers; ++l) {
                    const auto old_k = read_layer(**a, true, l), new_k = read_layer(**b, true, l);
                    const auto new_v = read_layer(**b, false, l);
                    const auto& k0 = before[2 * l];
                    const auto& v0 = before[2 * l + 1];
                    for (int32_t blk = 0; blk < shape.num_blocks; ++blk) {
                        const auto it = std::find(dst.begin(), dst.end(), blk);
                        const int32_t copied =
                            it == dst.end() ? 0 : std::min<int32_t>(16, num_tokens - int32_t(it - dst.begin()) * 16);
                        for (int32_t h = 0; h < 2; ++h) {
                            for (int32_t t = 0; t < 16; ++t) {
                                for (int32_t i = 0; i < 64; ++i) {
                                    const int64_t at = ((int64_t(blk) * 2 + h) * 16 + t) * 64 + i;
                                    if (t < copied) {
                                        const int32_t from = src[it - dst.begin()];
                                        const int64_t at_src = ((int64_t(from) * 2 + h) * 16 + t) * 64 + i;
                                        ASSERT_EQ(new_k[at], old_k[at]) << "layer " << l << " block " << blk;
                                        ASSERT_EQ(new_v[at], v0[at_src]) << "layer " << l << " block " << blk;
                                        // Unrotated dims keep their value, but a quantized row's
                                        // group (dims 32..63) shares a scale with rotated dims.
                                        if ((i >= 48 || delta == 0) && !kernels::kv_dtype_quantized(dtype)) {
                                            ASSERT_EQ(new_k[at], k0[at_src]);
                                        }
                                    } else {
                                        ASSERT_EQ(new_k[at], k0[at]) << "untouched, layer " << l << " block " << blk;
                                        ASSERT_EQ(new_v[at], v0[at]) << "untouched, layer " << l << " block " << blk;
                                    }
                                }
                            }
                        }
                    }
                    results[which].push_back(new_k);
                }
                ++which;
            }
            // CPU against reference: the same rotation up to one rounding of the pool's type.
            // Quantized: one quantum of the 32-value block the element is stored in (its largest
            // magnitude / 127 for q8_0, / 8 for q4_0), where the two backends' rotations round to
            // different levels. (A fixed value range of 2 was too tight: a rotation can move a
            // pair's magnitude up to sqrt(2) x its largest value, so some seeds failed.)
            const float tol = dtype == KvDtype::kF32    ? 1e-5f
                              : dtype == KvDtype::kF16  ? 2e-3f
                              : dtype == KvDtype::kBF16 ? 2e-2f
                                                        : 0.0f;
            const bool quantized = dtype == KvDtype::kQ8_0 || dtype == KvDtype::kQ4_0;
            for (size_t l = 0; l < results[0].size(); ++l) {
                for (size_t i = 0; i < results[0][l].size(); ++i) {
                    float bound = tol;
                    if (quantized) {
                        const size_t begin = i / 32 * 32, end = std::min(begin + 32, results[0][l].size());
                        float amax = 0.0f;
                        for (size_t j = begin; j < end; ++j) {
                            amax = std::max({amax, std::fabs(results[0][l][j]), std::fabs(results[1][l][j])});
                        }
                        bound = dtype == KvDtype::kQ8_0 ? amax / 127 + 1e-3f : amax / 8 + 1e-2f;
                    }
                    ASSERT_NEAR(results[0][l][i], results[1][l][i], bound) << "layer " << l << " element " << i;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, KvMemoryTest,
                         ::testing::Values(KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16, KvDtype::kQ8_0,
                                           KvDtype::kQ4_0),
                         [](const auto& info) { return std::string(kernels::kv_dtype_name(info.param)); });

}  // namespace
}  // namespace lazyattn
