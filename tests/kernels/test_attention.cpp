// The CPU paged attention kernel against the scalar reference, on fresh random inputs: odd span
// lengths, many spans with nonzero offsets (lazy), raw keys (lazy-k), GQA, head dims 64 and 128,
// prefill (causal rows) and decode (one row per sequence).
#include <algorithm>
#include <numeric>
#include <optional>

#include "backend/backend.h"
#include "core/half_convert.h"
#include "kernels/ref/reference_ops.h"
#include "op_cases.h"
#include "random_inputs.h"

namespace lazyattn {
namespace {

using kernels::AttentionParams;
using kernels::AttentionSeq;
using kernels::AttentionSpan;

struct Case {
    int32_t num_heads, num_kv_heads, head_dim;
    std::vector<std::vector<int32_t>> span_lengths;  // per sequence: segment lengths, then tail
    std::vector<int32_t> num_queries;                // per sequence: query rows at the tail's end
    bool keys_rotated;
    bool neox;
    kernels::KvDtype kv_dtype = kernels::KvDtype::kF32;  // keys, and values unless v_dtype says
    std::optional<kernels::KvDtype> v_dtype = std::nullopt;
    // Segments get a random temperature and log-weight (AttentionSpan::logit_scale, logit_bias),
    // as document rescaling sets them; the tail stays plain.
    bool rescaled = false;
    int32_t sliding_window = 0;  // AttentionParams::sliding_window
    // Sparse recompute: each segment token is overridden by a private row (KeyOverride) with this
    // probability (1: every token); the tail stays shared.
    double override_share = 0.0;
    // Also compare Backend::attention_mass with the reference's (question-guided selection).
    bool check_mass = false;
};

// What run_case computed: the reference's and the CPU kernel's outputs.
struct CaseResult {
    std::vector<float> want, got;
};

// Builds a random batch in the layout LazyAttention uses: each sequence has segments stored from
// position 0 (stored_base 0) placed back to back, then a tail stored at its logical positions.
CaseResult run_case(const Case& c, std::mt19937_64& rng) {
    const int32_t bs = 16, d = c.head_dim;
    std::vector<int32_t> block_ids;
    std::vector<AttentionSpan> spans;
    std::vector<AttentionSeq> seqs;
    std::vector<int32_t> q_pos;
    int32_t next_block = 0;
    for (size_t s = 0; s < c.span_lengths.size(); ++s) {
        const auto& lens = c.span_lengths[s];
        const int32_t span_begin = int32_t(spans.size());
        int32_t logical = 0;
        for (size_t i = 0; i < lens.size(); ++i) {
            const bool tail = i + 1 == lens.size();
            spans.push_back({int32_t(block_ids.size()), lens[i], logical, tail ? logical : 0});
            if (c.rescaled && !tail) {
                spans.back().logit_scale = 0.5f + float(rng() % 1000) / 1000.0f;
                spans.back().logit_bias = -2.0f + 4.0f * float(rng() % 1000) / 1000.0f;
            }
            for (int32_t b = 0; b < (lens[i] + bs - 1) / bs; ++b) block_ids.push_back(next_block++);
            logical += lens[i];
        }
        const int32_t nq = std::min(c.num_queries[s], lens.back());
        seqs.push_back({int32_t(q_pos.size()), nq, span_begin, int32_t(spans.size())});
        for (int32_t i = 0; i < nq; ++i) q_pos.push_back(logical - nq + i);
    }
    // Shuffle physical block ids so spans are not contiguous in memory.
    std::vector<int32_t> perm(next_block + 3);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (auto& b : block_ids) b = perm[b];
    // Private rows: segment tokens drawn with probability override_share, each given a slot in
    // blocks past the shared ones (in a shuffled order, so neighbours do not sit together).
    std::vector<kernels::KeyOverride> overrides;
    for (const AttentionSeq& seq : seqs) {
        for (int32_t si = seq.span_begin; si + 1 < seq.span_end; ++si) {
            AttentionSpan& span = spans[si];
            span.override_begin = int32_t(overrides.size());
            for (int32_t t = 0; t < span.num_tokens; ++t) {
                if (c.override_share > 0 && double(rng() % 1000) < c.override_share * 1000) overrides.push_back({t, 0});
            }
            span.override_count = int32_t(overrides.size()) - span.override_begin;
        }
    }
    const int32_t private_blocks = int32_t((overrides.size() + bs - 1) / bs);
    std::vector<int32_t> private_slots(size_t(private_blocks) * bs);
    std::iota(private_slots.begin(), private_slots.end(), (next_block + 3) * bs);
    std::shuffle(private_slots.begin(), private_slots.end(), rng);
    for (size_t i = 0; i < overrides.size(); ++i) overrides[i].slot = private_slots[i];
    const int32_t num_blocks = next_block + 3 + private_blocks;
    const int64_t cache_floats = int64_t(num_blocks) * c.num_kv_heads * bs * d;
    auto k = testing::random_floats(rng, cache_floats), v = testing::random_floats(rng, cache_floats);
    // A 16-bit or quantized cache holds the same values rounded or quantized (each row on its
    // own); the reference reads them through its own dequantizer, the kernels through theirs.
    const kernels::KvDtype kt = c.kv_dtype, vt = c.v_dtype.value_or(c.kv_dtype);
    std::vector<uint8_t> kc(size_t(kernels::kv_bytes(kt, cache_floats))),
        vc(size_t(kernels::kv_bytes(vt, cache_floats)));
    kernels::f32_to_kv(k.data(), kt, kc.data(), cache_floats);
    kernels::f32_to_kv(v.data(), vt, vc.data(), cache_floats);
    const int32_t rows = int32_t(q_pos.size());
    auto q = testing::random_floats(rng, int64_t(rows) * c.num_heads * d, -2.0f, 2.0f);
    std::vector<float> inv_freq(d / 2);
    for (int32_t i = 0; i < d / 2; ++i) inv_freq[i] = float(std::pow(10000.0, -2.0 * i / d));

    AttentionParams p{};
    p.q = q.data();
    p.q_pos = q_pos.data();
    p.k_cache = kc.data();
    p.v_cache = vc.data();
    p.k_dtype = kt;
    p.v_dtype = vt;
    p.block_ids = block_ids.data();
    p.spans = spans.data();
    p.seqs = seqs.data();
    p.num_seqs = int32_t(seqs.size());
    p.num_heads = c.num_heads;
    p.num_kv_heads = c.num_kv_heads;
    p.head_dim = d;
    p.block_size = bs;
    p.scale = 1.0f / std::sqrt(float(d));
    // A cos/sin table for the first 300 positions (as the model builds one); later positions are
    // computed directly, so both ways of getting the angles are exercised.
    constexpr int32_t kTablePositions = 300;
    std::vector<float> table(int64_t(kTablePositions) * d);
    for (int32_t pos = 0; pos < kTablePositions; ++pos) {
        for (int32_t i = 0; i < d / 2; ++i) {
            const double angle = double(pos) * double(inv_freq[i]);
            table[(int64_t(pos) * (d / 2) + i) * 2] = float(std::cos(angle));
            table[(int64_t(pos) * (d / 2) + i) * 2 + 1] = float(std::sin(angle));
        }
    }
    p.rope = {inv_freq.data(), d, c.neox, 1.0f, table.data(), kTablePositions};
    p.keys_rotated = c.keys_rotated;
    p.sliding_window = c.sliding_window;
    p.overrides = overrides.empty() ? nullptr : overrides.data();

    std::vector<float> want(int64_t(rows) * c.num_heads * d), got(want.size(), -7.0f);
    p.out = want.data();
    kernels::ref::attention(p);
    auto backend = backend::make_cpu_backend(2);
    p.out = got.data();
    backend->attention(p);
    // fp32 accumulation with online softmax against a double reference.
    testing::expect_close(got, want, 2e-4, 1e-2, "attention");
    // Planned once per step (as the model does before its layers), every layer's call gives
    // the bits of a call that plans for itself; one plan serves layers with and without a
    // sliding window (the decode items differ by window).
    auto planned_backend = backend::make_cpu_backend(2);
    EXPECT_TRUE(planned_backend->plan_attention(kernels::step_of(p)).ok());
    for (const int32_t window : {c.sliding_window, 0, 7, c.sliding_window}) {
        AttentionParams layer = p;
        layer.sliding_window = window;
        std::vector<float> alone(want.size(), -7.0f), planned(want.size(), -5.0f);
        layer.out = alone.data();
        backend->attention(layer);
        layer.planned = true;
        layer.out = planned.data();
        planned_backend->attention(layer);
        EXPECT_EQ(planned, alone) << "planned and unplanned attention differ at window " << window;
    }
    if (c.check_mass) {
        int64_t total = 0;
        for (const AttentionSeq& seq : seqs) {
            for (int32_t si = seq.span_begin; si < seq.span_end; ++si) total += spans[si].num_tokens;
        }
        std::vector<float> mass_want(size_t(total), -1.0f), mass_got(size_t(total), -2.0f);
        kernels::ref::attention_mass(p, mass_want.data());
        EXPECT_TRUE(backend->attention_mass_supported());
        backend->attention_mass(p, mass_got.data());
        // Weights in [0, 1] summed over rows and heads: bounded absolutely.
        testing::expect_close(mass_got, mass_want, 1e-4, 1.0, "attention mass");
        // Each (row, head) that sees a key spreads a weight of exactly 1 over its keys.
        int64_t at = 0;
        for (const AttentionSeq& seq : seqs) {
            double sum = 0.0;
            for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
                for (int32_t t = 0; t < spans[si].num_tokens; ++t) sum += mass_want[size_t(at++)];
            }
            EXPECT_NEAR(sum, double(seq.num_queries) * c.num_heads, 1e-6 * seq.num_queries * c.num_heads);
        }
    }
    if (!overrides.empty()) {
        // Private rows read in place of shared ones give the bits of a cache where they were
        // written over the shared rows (every path: patched blocks, widened slots, decode).
        std::vector<uint8_t> kw = kc, vw = vc;
        const int64_t k_row = kernels::kv_bytes(kt, d), v_row = kernels::kv_bytes(vt, d);
        for (const AttentionSeq& seq : seqs) {
            for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
                const AttentionSpan& span = spans[si];
                for (int32_t i = 0; i < span.override_count; ++i) {
                    const kernels::KeyOverride& o = overrides[span.override_begin + i];
                    const int64_t shared = int64_t(block_ids[span.block_offset + o.token / bs]) * bs + o.token % bs;
                    for (int32_t h = 0; h < c.num_kv_heads; ++h) {
                        const auto row = [&](int64_t slot) {
                            return (slot / bs * c.num_kv_heads + h) * bs + slot % bs;
                        };
                        std::copy_n(kc.begin() + row(o.slot) * k_row, k_row, kw.begin() + row(shared) * k_row);
                        std::copy_n(vc.begin() + row(o.slot) * v_row, v_row, vw.begin() + row(shared) * v_row);
                    }
                }
            }
        }
        AttentionParams written = p;
        written.k_cache = kw.data();
        written.v_cache = vw.data();
        written.overrides = nullptr;
        std::vector<float> expected(want.size(), -3.0f);
        written.out = expected.data();
        backend->attention(written);
        EXPECT_EQ(got, expected) << "private rows read differently from rows written in place";
        std::vector<float> ref_written(want.size(), -3.0f);
        written.out = ref_written.data();
        kernels::ref::attention(written);
        EXPECT_EQ(want, ref_written) << "the reference reads private rows differently from rows in place";
    }
    return {std::move(want), std::move(got)};
}

// The shapes every backend's attention is checked on (op_cases.h).
using testing::op_cases::AttentionShape;
class AttentionTest : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(AttentionTest, MatchesReference) {
    const auto [num_heads, num_kv_heads, head_dim, keys_rotated] = GetParam();
    std::mt19937_64 rng(testing::test_seed() + num_heads * 131 + head_dim + keys_rotated);
    // Prefill: segments of lengths 1, B-1, B, B+1, 3B+5, then a tail of 17 queries.
    run_case({num_heads, num_kv_heads, head_dim, {{1, 15, 16, 17, 53, 17}}, {17}, keys_rotated, false}, rng);
    // Decode batch: sequences with 0, 1, 2 and 40 segments, one query each; neox pairing.
    std::vector<int32_t> many(40);
    for (auto& l : many) l = 1 + int32_t(rng() % 40);
    many.push_back(5);
    run_case({num_heads, num_kv_heads, head_dim, {{9}, {16, 1}, {3, 99, 20}, many}, {1, 1, 1, 1}, keys_rotated, true},
             rng);
    // Long decode sequences: spans longer than one decode chunk (512 keys) are split into chunks
    // attended separately and merged; the last chunk ends inside a block.
    run_case({num_heads, num_kv_heads, head_dim, {{300, 333}, {1100, 7}, {513}}, {1, 1, 1}, keys_rotated, false}, rng);
    // Rescaled segments: prefill tiles, decode (one chunk and several), rows, 16-bit decode.
    for (const auto dtype : {kernels::KvDtype::kF32, kernels::KvDtype::kF16}) {
        Case prefill{num_heads, num_kv_heads, head_dim, {{1, 15, 16, 17, 53, 17}}, {17}, keys_rotated, false, dtype};
        prefill.rescaled = true;
        run_case(prefill, rng);
        Case decode{num_heads, num_kv_heads, head_dim, {{9}, {16, 1}, {600, 40, 7}},
                    {1, 1, 1}, keys_rotated, true,     dtype};
        decode.rescaled = true;
        run_case(decode, rng);
    }
    // q8_0 and q4_0 caches (and K and V of different types, some without a decode kernel of
    // their own: widened per block), through every path.
    using kernels::KvDtype;
    for (const auto& [kt, vt] : {std::pair{KvDtype::kQ8_0, KvDtype::kQ8_0}, std::pair{KvDtype::kQ4_0, KvDtype::kQ4_0},
                                 std::pair{KvDtype::kQ8_0, KvDtype::kF16}, std::pair{KvDtype::kF16, KvDtype::kQ8_0},
                                 std::pair{KvDtype::kQ4_0, KvDtype::kQ8_0}}) {
        Case prefill{num_heads, num_kv_heads, head_dim, {{1, 15, 16, 17, 53, 17}}, {17}, keys_rotated, false, kt, vt};
        run_case(prefill, rng);
        Case decode{num_heads, num_kv_heads, head_dim, {{9}, {16, 1}, {600, 40, 7}}, {1, 1, 1}, keys_rotated,
                    true,      kt,           vt};
        decode.rescaled = true;
        run_case(decode, rng);
        run_case({num_heads,
                  num_kv_heads,
                  head_dim,
                  {{200, 33}, {40, 5}, {17, 64}},
                  {33, 1, 20},
                  keys_rotated,
                  false,
                  kt,
                  vt},
                 rng);
    }
    // Mixed prefill rows and a tail longer than one task chunk.
    run_case({num_heads, num_kv_heads, head_dim, {{989}, {33, 7, 100}}, {99, 100}, keys_rotated, false}, rng);
    // 16-bit caches, through every path: prefill tiles, decode chunks, partial blocks.
    for (const auto dtype : {kernels::KvDtype::kF16, kernels::KvDtype::kBF16}) {
        run_case({num_heads, num_kv_heads, head_dim, {{1, 15, 16, 17, 53, 17}}, {17}, keys_rotated, false, dtype}, rng);
        run_case({num_heads, num_kv_heads, head_dim, {{9}, {16, 1}, {600, 7}}, {1, 1, 1}, keys_rotated, true, dtype},
                 rng);
        // Prefill and decode sequences in one batch: prefill widens its blocks into scratch once.
        run_case({num_heads,
                  num_kv_heads,
                  head_dim,
                  {{200, 33}, {40, 5}, {17, 64}},
                  {33, 1, 20},
                  keys_rotated,
                  false,
                  dtype},
                 rng);
    }
}

// Sparse recompute: a share of each segment's tokens read from private rows instead of the shared
// ones (kernels::KeyOverride), on every path: prefill tiles and rows (widened slots of their own
// for 16-bit and quantized caches, patched blocks for fp32), decode in place and widened, raw keys
// (lazy-k), sliding windows; shares from a few tokens to every token.
TEST_P(AttentionTest, PrivateRowsOverrideSharedRows) {
    const auto [num_heads, num_kv_heads, head_dim, keys_rotated] = GetParam();
    std::mt19937_64 rng(testing::test_seed() + num_heads * 171 + head_dim + keys_rotated);
    using kernels::KvDtype;
    for (const double share : {0.05, 0.3, 1.0}) {
        for (const auto& [kt, vt] :
             {std::pair{KvDtype::kF32, KvDtype::kF32}, std::pair{KvDtype::kF16, KvDtype::kF16},
              std::pair{KvDtype::kQ8_0, KvDtype::kQ8_0}, std::pair{KvDtype::kQ4_0, KvDtype::kF16}}) {
            Case prefill{num_heads, num_kv_heads, head_dim, {{1, 15, 16, 17, 53, 17}}, {17}, keys_rotated,
                         false,     kt,           vt};
            prefill.override_share = share;
            prefill.check_mass = true;
            run_case(prefill, rng);
            Case decode{num_heads, num_kv_heads, head_dim, {{9}, {16, 1}, {600, 40, 7}}, {1, 1, 1}, keys_rotated,
                        true,      kt,           vt};
            decode.override_share = share;
            decode.rescaled = share == 0.3;
            run_case(decode, rng);
            Case mixed{num_heads, num_kv_heads, head_dim, {{200, 33}, {40, 5}, {17, 64}}, {33, 1, 20}, keys_rotated,
                       false,     kt,           vt};
            mixed.override_share = share;
            mixed.sliding_window = share == 0.05 ? 40 : 0;
            mixed.check_mass = true;
            mixed.rescaled = share == 1.0;
            run_case(mixed, rng);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest, ::testing::ValuesIn(testing::op_cases::attention_shapes()),
                         [](const auto& info) { return testing::op_cases::name(info.param); });

// Sliding windows (Gemma 3's local layers) on every path: prefill tiles and rows, decode chunks,
// 16-bit caches read in place, lazy offsets and raw keys; windows shorter than a block, equal to
// it, across block edges and longer than every span.
TEST(AttentionWindow, MatchesReference) {
    std::mt19937_64 rng(testing::test_seed() + 77);
    for (const auto& [heads, kv_heads, d] : {std::tuple{8, 2, 64}, std::tuple{4, 4, 128}, std::tuple{6, 3, 96}}) {
        for (const bool keys_rotated : {true, false}) {
            for (const int32_t window : {1, 5, 16, 17, 40, 1000}) {
                for (const auto dtype : {kernels::KvDtype::kF32, kernels::KvDtype::kF16, kernels::KvDtype::kQ8_0}) {
                    Case prefill{heads, kv_heads, d, {{1, 15, 16, 17, 53, 37}}, {37}, keys_rotated, false, dtype};
                    prefill.sliding_window = window;
                    run_case(prefill, rng);
                    Case decode{heads,        kv_heads,     d,    {{9}, {16, 1}, {600, 40, 7}, {3, 99, 20}},
                                {1, 1, 1, 1}, keys_rotated, true, dtype};
                    decode.sliding_window = window;
                    decode.rescaled = window == 17;
                    run_case(decode, rng);
                }
            }
        }
    }
}

// From first principles: with zero queries every visible key scores the same, so the output is
// the mean of the visible values. Each value row holds its key's logical position, so a query at
// p with window W must read the mean of max(0, p-W+1) .. p, wherever the keys sit in the cache
// (two documents stored from position 0, then a tail) and on every kernel path.
TEST(AttentionWindow, UniformScoresAverageThePositionsInsideTheWindow) {
    const int32_t d = 64, bs = 16, num_heads = 2, num_kv_heads = 1;
    const std::vector<int32_t> lens{23, 40, 30};  // documents, then the tail
    std::vector<int32_t> block_ids;
    std::vector<AttentionSpan> spans;
    int32_t logical = 0;
    for (size_t i = 0; i < lens.size(); ++i) {
        const bool tail = i + 1 == lens.size();
        spans.push_back({int32_t(block_ids.size()), lens[i], logical, tail ? logical : 0});
        for (int32_t b = 0; b < (lens[i] + bs - 1) / bs; ++b) block_ids.push_back(int32_t(block_ids.size()));
        logical += lens[i];
    }
    const int32_t num_blocks = int32_t(block_ids.size());
    std::vector<float> k(int64_t(num_blocks) * bs * d, 0.5f), v(k.size(), 0.0f);
    for (const AttentionSpan& span : spans) {
        for (int32_t t = 0; t < span.num_tokens; ++t) {
            float* row = v.data() + (int64_t(block_ids[span.block_offset + t / bs]) * bs + t % bs) * d;
            std::fill(row, row + d, float(span.logical_start + t));
        }
    }
    std::vector<float> inv_freq(d / 2);
    for (int32_t i = 0; i < d / 2; ++i) inv_freq[i] = float(std::pow(10000.0, -2.0 * i / d));
    for (const int32_t num_queries : {30, 1}) {  // prefill rows, then decode
        std::vector<int32_t> q_pos;
        for (int32_t i = 0; i < num_queries; ++i) q_pos.push_back(logical - num_queries + i);
        std::vector<AttentionSeq> seqs{{0, num_queries, 0, int32_t(spans.size())}};
        std::vector<float> q(size_t(num_queries) * num_heads * d, 0.0f), out(q.size());
        for (const int32_t window : {1, 7, 16, 33, 70}) {
            for (const bool keys_rotated : {true, false}) {
                AttentionParams p{q.data(),     q_pos.data(), out.data(),
                                  k.data(),     v.data(),     block_ids.data(),
                                  spans.data(), seqs.data(),  1,
                                  num_heads,    num_kv_heads, d,
                                  bs,           0.125f,       {inv_freq.data(), d, false, 1.0f, nullptr, 0},
                                  keys_rotated};
                p.sliding_window = window;
                for (int impl = 0; impl < 2; ++impl) {
                    std::fill(out.begin(), out.end(), -1.0f);
                    if (impl == 0) {
                        kernels::ref::attention(p);
                    } else {
                        backend::make_cpu_backend(2)->attention(p);
                    }
                    for (int32_t r = 0; r < num_queries; ++r) {
                        const int32_t lo = std::max(0, q_pos[r] - window + 1);
                        const double mean = 0.5 * (lo + q_pos[r]);
                        for (int32_t i = 0; i < num_heads * d; ++i) {
                            ASSERT_NEAR(out[size_t(r) * num_heads * d + i], mean, 1e-3)
                                << (impl ? "cpu" : "reference") << " window " << window << " row " << r;
                        }
                    }
                }
            }
        }
    }
}

TEST(AttentionWindow, WindowLongerThanTheSequenceChangesNothing) {
    for (const int32_t window : {0, 60, 1 << 30}) {
        std::mt19937_64 rng(testing::test_seed() + 79);  // the same inputs for every window
        Case c{4, 2, 64, {{9, 30, 21}}, {21}, false, true};
        c.sliding_window = window;
        static std::vector<float> unwindowed;
        const CaseResult r = run_case(c, rng);
        if (window == 0) {
            unwindowed = r.want;
        } else {
            EXPECT_EQ(r.want, unwindowed) << "window " << window;
        }
    }
}

TEST(AttentionTest, QueryBeforeEverySpanGivesZeros) {
    // A row that sees no key (cannot happen in a valid plan, but must not produce NaN).
    std::vector<float> q(64, 1.0f), out(64, 5.0f), k(16 * 64, 1.0f), v(16 * 64, 1.0f), inv_freq(32, 0.1f);
    std::vector<int32_t> block_ids{0}, q_pos{0};
    std::vector<AttentionSpan> spans{{0, 4, 10, 0}};
    std::vector<AttentionSeq> seqs{{0, 1, 0, 1}};
    AttentionParams p{q.data(),
                      q_pos.data(),
                      out.data(),
                      k.data(),
                      v.data(),
                      block_ids.data(),
                      spans.data(),
                      seqs.data(),
                      1,
                      1,
                      1,
                      64,
                      16,
                      0.125f,
                      {inv_freq.data(), 64, false, 1.0f, nullptr, 0},
                      true};
    backend::make_cpu_backend(1)->attention(p);
    for (float x : out) EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace lazyattn
