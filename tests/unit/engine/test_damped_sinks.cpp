// Damped document sinks (DocumentReuse::damp_tokens / damp_bias, "damp=N:B", docs/design.md
// §10): the setting's string form and ranges, the spans the runner lays out for it, and the two
// invariants that pin what it computes (no bias: plain lazy bit for bit; the most negative bias:
// the damped keys as if absent).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "backend/backend.h"
#include "engine/loading/block_finetune.h"
#include "engine/sync_engine.h"
#include "kernels/ref/reference_ops.h"
#include "loader/gguf_file.h"
#include "loader/gguf_writer.h"
#include "policy_harness.h"
#include "random_inputs.h"
#include "reuse_fixture.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::engine {
namespace {

using namespace reuse_testing;

// Damped sinks ("damp=N:B", docs/design.md §10): the string form round-trips with every other
// setting it composes with; check() holds its ranges (tokens [0, 4096], bias [-32, 0], a bias
// needs tokens) and refuses it beside private recomputed rows, naming the setting.
TEST(DocumentReuse, DampedSinksParseFormatAndRanges) {
    auto damp = parse_document_reuse("damp=16:-2");
    ASSERT_TRUE(damp.ok()) << damp.status().to_string();
    EXPECT_EQ(damp->damp_tokens, 16);
    EXPECT_FLOAT_EQ(damp->damp_bias, -2.0f);
    EXPECT_TRUE(damp->damps());
    EXPECT_FALSE(damp->is_plain());
    EXPECT_EQ(damp->name(), "damp=16:-2");
    for (const char* spec : {"damp=16:-2", "damp=32:-0.5", "damp=16:0", "damp=5:-32", "anchor+bias=-1+damp=48:-4",
                             "neighbours=1+recompute=16+damp=32:-1", "scale=0.8+damp=4096:-8"}) {
        auto parsed = parse_document_reuse(spec);
        ASSERT_TRUE(parsed.ok()) << spec << ": " << parsed.status().to_string();
        EXPECT_EQ(parsed->name(), spec);
        EXPECT_EQ(*parse_document_reuse(parsed->name()), *parsed) << spec;
    }
    EXPECT_EQ(parse_document_reuse("damp=0:0")->name(), "plain");  // no tokens, no bias: off
    for (const char* bad : {"damp=16", "damp=16:", "damp=:-2", "damp=x:-2", "damp=16:y", "damp=16:-2:3", "damp=16:1",
                            "damp=16:-33", "damp=-16:-2", "damp=4097:-2", "damp=0:-2", "damp=16:-2+recompute=15%",
                            "damp=16:-2+recompute=16@random", "damp=16:nan"}) {
        EXPECT_FALSE(parse_document_reuse(bad).ok()) << bad;
    }
    const auto message = parse_document_reuse("damp=16:-2+recompute=15%@query").status().message();
    EXPECT_NE(message.find("recompute=N"), std::string::npos) << message;
    auto variant = parse_reuse_variant("lazy:damp=32:-2@q8_0");
    ASSERT_TRUE(variant.ok()) << variant.status().to_string();
    EXPECT_EQ(variant->reuse.damp_tokens, 32);
    EXPECT_TRUE(variant->kv_types.has_value());
    EXPECT_EQ(parse_reuse_variant("lazy:damp=16:-4")->reuse.name(), "damp=16:-4");

    const auto refused = [](auto set) {
        DocumentReuse r;
        set(r);
        const auto error = r.check();
        return error ? std::optional<ReuseSetting>(error->setting) : std::nullopt;
    };
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_tokens = -1; }), ReuseSetting::kDampTokens);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_tokens = DocumentReuse::kMaxDampTokens + 1; }),
              ReuseSetting::kDampTokens);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_bias = -1.0f; }), ReuseSetting::kDampTokens);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_tokens = 16, r.damp_bias = 0.5f; }), ReuseSetting::kDampBias);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_tokens = 16, r.damp_bias = -32.5f; }), ReuseSetting::kDampBias);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_tokens = 16, r.damp_bias = std::nanf(""); }),
              ReuseSetting::kDampBias);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_tokens = 16, r.damp_bias = DocumentReuse::kMinDampBias; }),
              std::nullopt);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_tokens = 16, r.damp_bias = -2, r.recompute_share = 0.1; }),
              ReuseSetting::kCombination);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.damp_tokens = 16, r.damp_bias = -2, r.recompute_tokens = 16; }),
              std::nullopt);
    // Whole blocks, at most the document.
    DocumentReuse r = *parse_document_reuse("damp=5:-2");
    EXPECT_EQ(r.damp_count(100, 16), 16);
    EXPECT_EQ(r.damp_count(9, 16), 9);
    EXPECT_EQ(r.damp_count(100, 4), 8);
    EXPECT_EQ(r.damp_count(0, 16), 0);
    EXPECT_EQ(DocumentReuse{}.damp_count(100, 16), 0);
}

// ---- Damped document sinks (DocumentReuse::damp_tokens / damp_bias, docs/design.md §10): the
// spans the runner lays out for them (a later document's first whole blocks split off with the
// bias added; the request's position 0 and recomputed rows left alone), and the two invariants
// that pin what the setting computes: with no bias the split changes no bit of the output (fp32),
// and the most negative bias reads the damped keys as if they were not there at all.

using kernels::AttentionSpan;
using testing_support::letters;
using testing_support::PolicyHarness;

DocumentReuse damp(int32_t tokens, float bias) {
    DocumentReuse r;
    r.damp_tokens = tokens;
    r.damp_bias = bias;
    return r;
}

// The spans of the request's last step (a decode row: its segments' spans, then its tail's).
std::vector<AttentionSpan> last_step_spans(RagRequest r, int32_t block_size) {
    EngineConfig c;
    c.cache_mode = CacheMode::kLazy;
    c.block_size = block_size;
    c.kv_num_blocks = 256;
    c.max_batch_tokens = 64;
    PolicyHarness h(c);
    r.max_tokens = 2;
    auto handle = h.submit(std::move(r));
    h.run_all();
    EXPECT_TRUE(handle->finished());
    h.expect_pool_whole();
    return h.steps.empty() ? std::vector<AttentionSpan>{} : h.steps.back().spans;
}

// (logical_start, num_tokens, stored_base, logit_bias) of each span, for comparing layouts.
struct SpanView {
    int32_t logical, tokens, stored;
    float bias;
    bool operator==(const SpanView&) const = default;
};
std::ostream& operator<<(std::ostream& os, const SpanView& s) {
    return os << "{" << s.logical << ", " << s.tokens << ", " << s.stored << ", " << s.bias << "}";
}
std::vector<SpanView> views(const std::vector<AttentionSpan>& spans) {
    std::vector<SpanView> v;
    for (const AttentionSpan& s : spans) v.push_back({s.logical_start, s.num_tokens, s.stored_base, s.logit_bias});
    return v;
}

// Block size 4: damp=5 covers each later document's first 8 tokens (whole blocks, at most the
// document), as a span of their own carrying the bias, its rest as another; the document at
// position 0 is the request's real sink and stays whole.
TEST(DampedSinks, LaterDocumentsLoseTheirFirstBlocksToASpanOfTheirOwn) {
    RagRequest r = testing_support::request({letters(10, 1), letters(13, 2), letters(3, 3)}, 2, 2);
    r.reuse = damp(5, -2.0f);
    EXPECT_EQ(views(last_step_spans(r, 4)),
              (std::vector<SpanView>{
                  {0, 10, 0, 0.0f}, {10, 8, 0, -2.0f}, {18, 5, 8, 0.0f}, {23, 3, 0, -2.0f}, {26, 3, 26, 0.0f}}));
    // Plain: one span per segment, as before.
    r.reuse = {};
    EXPECT_EQ(views(last_step_spans(r, 4)),
              (std::vector<SpanView>{{0, 10, 0, 0.0f}, {10, 13, 0, 0.0f}, {23, 3, 0, 0.0f}, {26, 3, 26, 0.0f}}));
    // A preamble is the request's sink: every document is damped, on top of the documents' own
    // log-weight.
    r.first_segment_is_preamble = true;
    r.reuse = damp(5, -2.0f);
    r.reuse.logit_bias = 0.5f;
    EXPECT_EQ(views(last_step_spans(r, 4)),
              (std::vector<SpanView>{
                  {0, 10, 0, 0.0f}, {10, 8, 0, -1.5f}, {18, 5, 8, 0.5f}, {23, 3, 0, -1.5f}, {26, 3, 26, 0.0f}}));
    // Recomputed first tokens (a block each here) saw their context: only the cached ones after
    // them, up to the damped count, get the bias.
    r.reuse = damp(5, -2.0f);
    r.reuse.recompute_tokens = 4;
    const auto spans = views(last_step_spans(r, 4));
    EXPECT_EQ(spans, (std::vector<SpanView>{{0, 10, 0, 0.0f},
                                            {10, 4, 10, 0.0f},
                                            {14, 4, 4, -2.0f},
                                            {18, 5, 8, 0.0f},
                                            {23, 3, 23, 0.0f},
                                            {26, 3, 26, 0.0f}}));
}

// With a bias of 0 the damped spans are laid out (split off, as with any bias) and read with no
// weight change: the output is plain lazy's, bit for bit (fp32 KV), in every segment mode and
// for every generated token. With a bias it differs, and the modes agree with one another.
TEST(DampedSinks, WithoutBiasTheOutputIsPlainLazysBitForBit) {
    Tokens tok(63);
    const std::vector<std::vector<int32_t>> docs{tok.make(17), tok.make(1), tok.make(40), tok.make(16), tok.make(33)};
    const auto preamble = tok.make(9), tail = tok.make(11);
    std::vector<float> damped_lazy;
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn}) {
        auto e = make_engine(mode);
        const RagRequest plain = request_of(preamble, docs, tail, {});
        for (const int32_t n : {16, 32}) {
            RagRequest zero = plain;
            zero.reuse = damp(n, 0.0f);
            auto a = e->tail_logits(plain), b = e->tail_logits(zero);
            ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string() << b.status().to_string();
            EXPECT_EQ(*a, *b) << cache_mode_name(mode) << " damp=" << n << ":0";
            auto ra = e->run(plain), rb = e->run(zero);
            ASSERT_TRUE(ra.ok() && rb.ok());
            EXPECT_EQ(ra->token_ids, rb->token_ids);
        }
        RagRequest damped = plain;
        damped.reuse = damp(16, -2.0f);
        auto c = e->tail_logits(damped), a = e->tail_logits(plain);
        ASSERT_TRUE(c.ok() && a.ok());
        EXPECT_GT(testing::max_relative_difference(*c, *a), 1e-3) << cache_mode_name(mode);
        if (damped_lazy.empty()) {
            damped_lazy = *c;
        } else {
            testing::expect_close(*c, damped_lazy, 1e-4, 1.0,
                                  (std::string(cache_mode_name(mode)) + " damped vs lazy damped").c_str());
        }
        reuse_testing::expect_pool_whole(*e);
    }
}

// The most negative bias the setting takes (kMinDampBias, a weight of e^-32) against keys that
// are not there: the real CPU kernel and the scalar reference over the spans the runner lays out
// for damped documents, and over the same spans with the damped ones removed, on random q, K, V
// (head dim 64, GQA 2, f32 KV, 16-token blocks, prefill rows and one decode row).
TEST(DampedSinks, TheMostNegativeBiasMasksTheDampedKeys) {
    RagRequest r = testing_support::request({letters(9, 1), letters(40, 2), letters(17, 3), letters(64, 4)}, 7, 2);
    r.first_segment_is_preamble = true;
    r.reuse = damp(16, DocumentReuse::kMinDampBias);
    const std::vector<AttentionSpan> damped = last_step_spans(r, 16);
    std::vector<AttentionSpan> masked;
    for (const AttentionSpan& s : damped) {
        if (s.logit_bias != DocumentReuse::kMinDampBias) masked.push_back(s);
    }
    ASSERT_EQ(damped.size(), masked.size() + 3);  // the three documents' first blocks

    const int32_t bs = 16, d = 64, heads = 4, kv_heads = 2;
    int32_t blocks = 0, end = 0;
    for (const AttentionSpan& s : damped) {
        blocks = std::max(blocks, s.block_offset + (s.num_tokens + bs - 1) / bs);
        end = std::max(end, s.logical_start + s.num_tokens);
    }
    std::mt19937_64 rng(testing::test_seed() + 64);
    std::vector<int32_t> block_ids(static_cast<size_t>(blocks));  // each span's blocks, somewhere in the pool
    std::iota(block_ids.begin(), block_ids.end(), 0);
    std::shuffle(block_ids.begin(), block_ids.end(), rng);
    const int64_t cache = int64_t(blocks) * kv_heads * bs * d;
    const auto k = testing::random_floats(rng, cache), v = testing::random_floats(rng, cache);
    std::vector<int32_t> q_pos;
    for (int32_t p = end - 7; p < end; ++p) q_pos.push_back(p);  // the tail's rows
    const auto q = testing::random_floats(rng, int64_t(q_pos.size()) * heads * d, -2.0f, 2.0f);
    std::vector<float> inv_freq(d / 2);
    for (int32_t i = 0; i < d / 2; ++i) inv_freq[size_t(i)] = float(std::pow(10000.0, -2.0 * i / d));

    const auto attend = [&](const std::vector<AttentionSpan>& spans, int32_t rows, bool reference) {
        const kernels::AttentionSeq seq{0, rows, 0, int32_t(spans.size())};
        kernels::AttentionParams p{};
        p.q = q.data() + int64_t(q_pos.size() - size_t(rows)) * heads * d;
        p.q_pos = q_pos.data() + (q_pos.size() - size_t(rows));
        p.k_cache = reinterpret_cast<const uint8_t*>(k.data());
        p.v_cache = reinterpret_cast<const uint8_t*>(v.data());
        p.k_dtype = p.v_dtype = kernels::KvDtype::kF32;
        p.block_ids = block_ids.data();
        p.spans = spans.data();
        p.seqs = &seq;
        p.num_seqs = 1;
        p.num_heads = heads;
        p.num_kv_heads = kv_heads;
        p.head_dim = d;
        p.block_size = bs;
        p.scale = 1.0f / std::sqrt(float(d));
        p.rope = {inv_freq.data(), d, false, 1.0f, nullptr, 0};
        p.keys_rotated = true;
        std::vector<float> out(size_t(rows) * heads * d, -7.0f);
        p.out = out.data();
        if (reference) {
            kernels::ref::attention(p);
        } else {
            backend::make_cpu_backend(1)->attention(p);
        }
        return out;
    };
    for (const int32_t rows : {7, 1}) {
        for (const bool reference : {false, true}) {
            const auto with = attend(damped, rows, reference), without = attend(masked, rows, reference);
            // e^-32 of a key's weight is far below float rounding: what is left is the rounding of
            // another order of online-softmax rescalings (1e-6 of outputs of magnitude ~1e-2).
            testing::expect_close(with, without, 1e-4, 1e-2, reference ? "reference" : "cpu kernel");
            // And the damped keys mattered when not damped.
            std::vector<AttentionSpan> undamped = damped;
            for (AttentionSpan& s : undamped) s.logit_bias = 0.0f;
            EXPECT_GT(testing::max_relative_difference(attend(undamped, rows, reference), without), 1e-3);
        }
    }
}

}  // namespace
}  // namespace lazyattn::engine
