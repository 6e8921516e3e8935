// KvStorage in every element type, and the bulk fp16/bf16 conversions it stores through.
#include <cmath>
#include <cstring>
#include <limits>

#include "core/fp16.h"
#include "core/half_convert.h"
#include "core/large_buffer.h"
#include "kv/kv_storage.h"
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

class KvStorageTest : public ::testing::TestWithParam<KvDtype> {};

// Stores rows, copies blocks, reads and writes a block's keys; every value read back is the stored
// fp32 value rounded once to the pool's type.
TEST_P(KvStorageTest, StoreCopyAndBlockKeysRoundOnce) {
    const KvDtype dtype = GetParam();
    std::mt19937_64 rng(testing::test_seed() + int(dtype));
    kv::KvShape shape{2, 6, 3, 16, 64, dtype};
    kv::KvStorage kv(shape);
    EXPECT_EQ(shape.bytes_per_block(), 2 * 2 * 3 * 16 * 64 * kernels::kv_dtype_bytes(dtype));
    const int32_t rows = 20, dim = 3 * 64;
    const auto k = testing::random_floats(rng, rows * dim), v = testing::random_floats(rng, rows * dim);
    std::vector<int32_t> slots(rows);
    for (int32_t r = 0; r < rows; ++r) slots[r] = r < 16 ? 2 * 16 + r : 4 * 16 + (r - 16);  // blocks 2 and 4
    for (int32_t layer = 0; layer < 2; ++layer) kv.store(layer, k.data(), v.data(), slots.data(), rows);
    auto rounded = [&](float x) {
        switch (dtype) {
            case KvDtype::kF16:
                return fp16_to_fp32(fp32_to_fp16(x));
            case KvDtype::kBF16:
                return bf16_to_fp32(fp32_to_bf16(x));
            default:
                return x;
        }
    };
    // Block 2 -> block 0, block 4 (4 tokens) -> block 1.
    const int32_t src[] = {2, 4}, dst[] = {0, 1};
    kv.copy_tokens(src, dst, 20);
    std::vector<float> keys(shape.elements_per_block());
    for (int32_t layer = 0; layer < 2; ++layer) {
        for (int32_t block : {0, 2}) {
            kv.read_block_keys(layer, block, keys.data());
            for (int32_t h = 0; h < 3; ++h) {
                for (int32_t t = 0; t < 16; ++t) {
                    for (int32_t i = 0; i < 64; ++i) {
                        ASSERT_EQ(keys[(h * 16 + t) * 64 + i], rounded(k[t * dim + h * 64 + i]))
                            << "layer " << layer << " block " << block << " head " << h << " token " << t;
                    }
                }
            }
        }
        kv.read_block_keys(layer, 1, keys.data());
        EXPECT_EQ(keys[(2 * 16 + 3) * 64 + 5], rounded(k[19 * dim + 2 * 64 + 5]));
    }
    // Writing back what was read changes nothing (values already representable).
    kv.read_block_keys(1, 0, keys.data());
    kv.write_block_keys(1, 3, keys.data());
    std::vector<float> again(keys.size());
    kv.read_block_keys(1, 3, again.data());
    EXPECT_EQ(again, keys);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, KvStorageTest, ::testing::Values(KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16));

}  // namespace
}  // namespace lazyattn
