// The CUDA decode and prefill attention kernels against kernels::ref::attention computed on the
// same bf16 cache values, on fresh random batches: batch 1, 3 and 17; span lengths 1, 15, 16, 17,
// 300 (and an empty span); head dims 64 and 128; GQA ratios 1, 4 and 8; segments with nonzero
// delta; lazy (keys_rotated) and lazy-k; interleaved and neox RoPE, partial rotary dims, the
// cos/sin table and positions past its end; forced and automatic split-K.
//
// Tolerances (every element, |got - want| <= atol + rtol * |want|, NaN fails):
//   decode:  atol 5e-5, rtol 5e-4. The query stays fp32; only fp32 accumulation and fp32 RoPE
//            differ from the double reference (observed errors ~1e-6).
//   prefill: atol 6e-3, rtol 2e-2. Q (after rotation) and P are rounded to bf16 for the tensor
//            cores, and lazy-k keys are rounded to bf16 after rotation: score errors reach ~4e-3,
//            output errors ~3e-3 at worst. A wrong span offset moves outputs by >= 1e-2.
#include <random>

#include "attention_test_batch.h"
#include "op_cases.h"

namespace lazyattn::cuda_test {
namespace {

constexpr double kDecodeAtol = 5e-5, kDecodeRtol = 5e-4;
constexpr double kPrefillAtol = 6e-3, kPrefillRtol = 2e-2;

const int32_t kSpanLengths[] = {1, 15, 16, 17, 300};

struct Batch {
    RopeSpec rope;
    std::vector<SeqSpec> seqs;
    std::vector<int32_t> splits;  // decode: split counts to force (0 = automatic)
};

// Batches of one query per sequence.
std::vector<Batch> decode_batches(int32_t head_dim, bool keys_rotated, std::mt19937_64& rng) {
    std::vector<Batch> out;
    out.push_back({{!keys_rotated, head_dim == 128 ? 64 : 0, 1.0f, 0}, {{{300, 17, 1, 16}, 15, 1}}, {0}});
    out.push_back(
        {{keys_rotated, 0, 0.5f, 200}, {{{15}, 1, 1}, {{16, 17}, 16, 1}, {{300, 300, 0, 1}, 17, 1}}, {0, 1, 5}});
    Batch many{{false, head_dim / 2, 1.0f, 64}, {}, {0}};
    for (int i = 0; i < 17; ++i) {
        SeqSpec s;
        const int n = int(rng() % 6);
        for (int j = 0; j < n; ++j) s.segments.push_back(kSpanLengths[rng() % 5]);
        s.tail = kSpanLengths[rng() % 4];
        s.num_queries = 1;
        s.rescaled = i % 2 == 1;
        many.seqs.push_back(s);
    }
    out.push_back(many);
    return out;
}

// Batches of many query rows (causal inside the tail), including a tail whose first part is
// already cached (chunked prefill) and a one-row sequence.
std::vector<Batch> prefill_batches(int32_t head_dim, bool keys_rotated, std::mt19937_64& rng) {
    std::vector<Batch> out;
    // (The CPU emulator takes the last 100 of the 300 tail rows: same spans, a third of the work.)
    out.push_back({{keys_rotated, 0, 1.0f, 0}, {{{1, 15, 16, 17, 300}, 300, is_emulated() ? 100 : 300}}, {}});
    out.push_back(
        {{!keys_rotated, head_dim / 2, 0.5f, 150}, {{{17}, 16, 16}, {{300}, 130, 65}, {{}, 1, 1}, {{1}, 17, 17}}, {}});
    Batch many{{false, 0, 1.0f, 0}, {}, {}};
    const int num_seqs = is_emulated() ? 5 : 17;
    for (int i = 0; i < num_seqs; ++i) {
        SeqSpec s;
        const int n = int(rng() % 4);
        for (int j = 0; j < n; ++j) s.segments.push_back(kSpanLengths[rng() % 4]);
        s.tail = 1 + int32_t(rng() % 80);
        s.num_queries = 1 + int32_t(rng() % s.tail);
        s.rescaled = i % 2 == 1;
        many.seqs.push_back(s);
    }
    out.push_back(many);
    return out;
}

std::string describe(const HostBatch& b, bool keys_rotated, const char* kernel, int splits) {
    return std::string(kernel) + " heads " + std::to_string(b.shape.num_heads) + "/" +
           std::to_string(b.shape.num_kv_heads) + " d " + std::to_string(b.shape.head_dim) + " seqs " +
           std::to_string(b.seqs.size()) + (keys_rotated ? " lazy" : " lazy-k") + (b.rope.neox ? " neox" : "") +
           " rotary " + std::to_string(b.rope.rotary_dims) + " table " + std::to_string(b.rope.table_positions) +
           " splits " + std::to_string(splits);
}

// The shapes every backend's attention is checked on (op_cases.h); the CUDA kernels have head
// dims 64 and 128 only (another is refused: AttentionRejectsBadShapes).
using testing::op_cases::AttentionShape;

class CudaAttentionTest : public CudaTest, public ::testing::WithParamInterface<AttentionShape> {
protected:
    void SetUp() override {
        CudaTest::SetUp();
        if (IsSkipped()) return;
        if (GetParam().head_dim != 64 && GetParam().head_dim != 128) {
            GTEST_SKIP() << "no CUDA attention kernel for head_dim " << GetParam().head_dim;
        }
    }
};

TEST_P(CudaAttentionTest, DecodeMatchesReference) {
    const auto [num_heads, num_kv_heads, head_dim, keys_rotated] = GetParam();
    std::mt19937_64 rng(testing::test_seed() * 7 + head_dim * 131 + num_heads * 17 + num_kv_heads + keys_rotated);
    for (const Batch& batch : decode_batches(head_dim, keys_rotated, rng)) {
        const HostBatch b = make_batch({num_heads, num_kv_heads, head_dim}, batch.rope, batch.seqs, rng);
        const std::vector<float> want = reference_output(b, keys_rotated);
        DeviceBatch d(b);
        for (int32_t splits : batch.splits) {
            auto p = device_params(b, d, keys_rotated);
            p.num_splits = splits;
            LA_ASSERT_OK(backend().attention_decode(p));
            LA_ASSERT_OK(backend().synchronize());
            expect_all_close(d.out.download(), want, kDecodeAtol, kDecodeRtol,
                             describe(b, keys_rotated, "decode", splits));
        }
    }
}

TEST_P(CudaAttentionTest, PrefillMatchesReference) {
    const auto [num_heads, num_kv_heads, head_dim, keys_rotated] = GetParam();
    // Prefill references cost rows x keys x heads: fewer query heads, same GQA ratio.
    const int32_t group = num_heads / num_kv_heads;
    const int32_t kv_heads = group == 1 ? 2 : 1;
    std::mt19937_64 rng(testing::test_seed() * 11 + head_dim * 131 + num_heads * 17 + num_kv_heads + keys_rotated);
    for (const Batch& batch : prefill_batches(head_dim, keys_rotated, rng)) {
        const HostBatch b = make_batch({group * kv_heads, kv_heads, head_dim}, batch.rope, batch.seqs, rng);
        const std::vector<float> want = reference_output(b, keys_rotated);
        DeviceBatch d(b);
        LA_ASSERT_OK(backend().attention_prefill(device_params(b, d, keys_rotated)));
        LA_ASSERT_OK(backend().synchronize());
        expect_all_close(d.out.download(), want, kPrefillAtol, kPrefillRtol, describe(b, keys_rotated, "prefill", 0));
    }
}

// Sliding windows (Gemma 3's local layers): the same batches with a window shorter than a tile,
// across tiles and longer than any sequence; decode with and without split-K.
TEST_P(CudaAttentionTest, SlidingWindowMatchesReference) {
    const auto [num_heads, num_kv_heads, head_dim, keys_rotated] = GetParam();
    if (num_heads > 12) GTEST_SKIP() << "the window is shape-independent; MHA and GQA 3 cover it";
    std::mt19937_64 rng(testing::test_seed() * 13 + head_dim * 131 + num_heads * 17 + num_kv_heads + keys_rotated);
    for (const int32_t window : {5, 70, 100000}) {
        const std::vector<SeqSpec> decode_seqs{{{300, 17, 1, 16}, 15, 1}, {{15}, 1, 1}, {{40, 300}, 9, 1}};
        HostBatch b = make_batch({num_heads, num_kv_heads, head_dim}, {}, decode_seqs, rng);
        b.sliding_window = window;
        const std::vector<float> want = reference_output(b, keys_rotated);
        DeviceBatch d(b);
        for (int32_t splits : {1, 5}) {
            auto p = device_params(b, d, keys_rotated);
            p.num_splits = splits;
            LA_ASSERT_OK(backend().attention_decode(p));
            LA_ASSERT_OK(backend().synchronize());
            expect_all_close(d.out.download(), want, kDecodeAtol, kDecodeRtol,
                             describe(b, keys_rotated, "windowed decode", splits) + " w" + std::to_string(window));
        }
        const int32_t group = num_heads / num_kv_heads;
        const std::vector<SeqSpec> prefill_seqs{{{17, 40}, 90, 90}, {{}, 20, 20}};
        HostBatch pb = make_batch({group, 1, head_dim}, {true, 0, 1.0f, 0}, prefill_seqs, rng);
        pb.sliding_window = window;
        const std::vector<float> pwant = reference_output(pb, keys_rotated);
        DeviceBatch pd(pb);
        LA_ASSERT_OK(backend().attention_prefill(device_params(pb, pd, keys_rotated)));
        LA_ASSERT_OK(backend().synchronize());
        expect_all_close(pd.out.download(), pwant, kPrefillAtol, kPrefillRtol,
                         describe(pb, keys_rotated, "windowed prefill", 0) + " w" + std::to_string(window));
    }
}

// Sparse recompute: a share of the segment tokens read from private rows (kernels::KeyOverride)
// whose shared rows hold NaN, through decode (split and not) and prefill tiles.
TEST_P(CudaAttentionTest, PrivateRowsOverrideSharedRows) {
    const auto [num_heads, num_kv_heads, head_dim, keys_rotated] = GetParam();
    if (num_heads > 12) GTEST_SKIP() << "the override rule is shape-independent; MHA and GQA 3 cover it";
    std::mt19937_64 rng(testing::test_seed() * 17 + head_dim * 131 + num_heads * 17 + num_kv_heads + keys_rotated);
    for (const double share : {0.1, 1.0}) {
        std::vector<SeqSpec> decode_seqs{{{300, 17, 1, 16}, 15, 1}, {{15}, 1, 1}, {{40, 300}, 9, 1, true}};
        for (SeqSpec& s : decode_seqs) s.override_share = share;
        const HostBatch b = make_batch({num_heads, num_kv_heads, head_dim}, {}, decode_seqs, rng);
        const std::vector<float> want = reference_output(b, keys_rotated);
        DeviceBatch d(b);
        for (int32_t splits : {1, 5}) {
            auto p = device_params(b, d, keys_rotated);
            p.num_splits = splits;
            LA_ASSERT_OK(backend().attention_decode(p));
            LA_ASSERT_OK(backend().synchronize());
            expect_all_close(d.out.download(), want, kDecodeAtol, kDecodeRtol,
                             describe(b, keys_rotated, "decode with private rows", splits));
        }
        const int32_t group = num_heads / num_kv_heads;
        std::vector<SeqSpec> prefill_seqs{{{17, 40}, 90, 90}, {{33}, 20, 20}};
        for (SeqSpec& s : prefill_seqs) s.override_share = share;
        const HostBatch pb = make_batch({group, 1, head_dim}, {true, 0, 1.0f, 0}, prefill_seqs, rng);
        const std::vector<float> pwant = reference_output(pb, keys_rotated);
        DeviceBatch pd(pb);
        LA_ASSERT_OK(backend().attention_prefill(device_params(pb, pd, keys_rotated)));
        LA_ASSERT_OK(backend().synchronize());
        expect_all_close(pd.out.download(), pwant, kPrefillAtol, kPrefillRtol,
                         describe(pb, keys_rotated, "prefill with private rows", 0));
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionTest, ::testing::ValuesIn(testing::op_cases::attention_shapes()),
                         [](const auto& info) { return testing::op_cases::name(info.param); });

// The dispatcher picks decode for one row per sequence and prefill otherwise; a row that sees no
// key (a query before every span) gives zeros in both kernels.
TEST_F(CudaTest, AttentionDispatchAndEmptyRows) {
    std::mt19937_64 rng(testing::test_seed() + 99);
    HostBatch b = make_batch({8, 2, 64}, RopeSpec{}, {{{20}, 5, 5}}, rng);
    b.q_pos[0] = -3;  // sees nothing
    std::vector<float> want = reference_output(b, true);
    DeviceBatch d(b);
    auto p = device_params(b, d, true);
    LA_ASSERT_OK(backend().attention(p));
    LA_ASSERT_OK(backend().synchronize());
    const std::vector<float> got = d.out.download();
    expect_all_close(got, want, kPrefillAtol, kPrefillRtol, "prefill via attention()");
    for (int i = 0; i < 8 * 64; ++i) EXPECT_EQ(got[i], 0.0f) << "row that sees no key, element " << i;

    HostBatch one = make_batch({8, 2, 64}, RopeSpec{}, {{{20}, 5, 1}, {{3}, 1, 1}}, rng);
    one.q_pos[1] = -1;
    want = reference_output(one, false);
    DeviceBatch d1(one);
    LA_ASSERT_OK(backend().attention(device_params(one, d1, false)));
    LA_ASSERT_OK(backend().synchronize());
    const std::vector<float> got1 = d1.out.download();
    expect_all_close(got1, want, kDecodeAtol, kDecodeRtol, "decode via attention()");
    for (int i = 8 * 64; i < 2 * 8 * 64; ++i) EXPECT_EQ(got1[i], 0.0f) << "row that sees no key, element " << i;
}

TEST_F(CudaTest, AttentionRejectsBadShapes) {
    backend::cuda::CudaAttentionParams p{};
    p.num_seqs = 0;
    p.num_heads = 6;
    p.num_kv_heads = 4;
    p.head_dim = 64;
    p.block_size = 16;
    EXPECT_EQ(backend().attention(p).code(), StatusCode::kInvalidArgument) << "heads not a multiple of kv heads";
    p.num_heads = 8;
    p.head_dim = 96;
    EXPECT_EQ(backend().attention(p).code(), StatusCode::kUnsupported);
    p.head_dim = 64;
    static const float inv_freq[4] = {1.0f, 0.1f, 0.01f, 0.001f};
    p.rope.inv_freq = inv_freq;
    p.rope.rotary_dims = 8;
    p.rope.neox = true;
    EXPECT_EQ(backend().attention(p).code(), StatusCode::kUnsupported) << "neox rotary_dims must be a multiple of 16";
}

}  // namespace
}  // namespace lazyattn::cuda_test
