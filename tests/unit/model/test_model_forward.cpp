// Whole forward passes on tiny synthetic models: the CPU backend against the scalar reference
// backend, and the paged-cache plumbing (chunked prefill, decode, batches of sequences of
// different lengths) against one-shot prefill.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/backend.h"
#include "engine/runner/batch_builder.h"
#include "kv/block_pool.h"
#include "model/model.h"
#include "model_harness.h"
#include "random_inputs.h"
#include "synthetic_model_fixture.h"

namespace lazyattn {
namespace {

using model::ForwardBatch;
using model::Model;
using testing::Harness;
using testing::kBlock;

std::vector<int32_t> random_tokens(std::mt19937_64& rng, int32_t n, int32_t vocab) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng() % vocab);
    return t;
}

synthetic::SyntheticModelOptions llama_options() {
    synthetic::SyntheticModelOptions o;
    o.seed = 11;
    return o;
}

TEST(ModelForward, CpuBackendMatchesReferenceBackend) {
    for (const char* arch : {"llama", "qwen2"}) {
        auto o = llama_options();
        o.arch = arch;
        const std::string path = testing::synthetic_model_path(o, std::string("ref-") + arch);
        Harness cpu(path, backend::make_cpu_backend(2)), ref(path, backend::make_reference_backend());
        std::mt19937_64 rng(testing::test_seed());
        const auto tokens = random_tokens(rng, 37, cpu.model->config().vocab_size);
        testing::expect_close(cpu.prefill_logits(tokens, 37), ref.prefill_logits(tokens, 37), 1e-3, 1e-1, arch);
    }
}

TEST(ModelForward, ChunkedPrefillAndDecodeMatchOneShot) {
    const std::string path = testing::synthetic_model_path(llama_options(), "llama");
    Harness h(path, backend::make_cpu_backend(2));
    std::mt19937_64 rng(testing::test_seed() + 1);
    const auto tokens = random_tokens(rng, 53, h.model->config().vocab_size);
    const auto whole = h.prefill_logits(tokens, 53);
    testing::expect_close(h.prefill_logits(tokens, 5), whole, 1e-4, 1e-1, "chunks of 5");
    testing::expect_close(h.prefill_logits(tokens, 1), whole, 1e-4, 1e-1, "decode one by one");
    EXPECT_EQ(h.pool->num_free(), h.pool->num_blocks());
}

TEST(ModelForward, BatchOfSequencesMatchesEachAlone) {
    const std::string path = testing::synthetic_model_path(llama_options(), "llama");
    Harness h(path, backend::make_cpu_backend(2));
    std::mt19937_64 rng(testing::test_seed() + 2);
    const int32_t vocab = h.model->config().vocab_size;
    const std::vector<std::vector<int32_t>> prompts{random_tokens(rng, 1, vocab), random_tokens(rng, 17, vocab),
                                                    random_tokens(rng, 40, vocab)};
    // First: the prompts' first halves alone (prefix in cache), then one batch computing the
    // rest of every sequence at once, mixing a decode-like row with prefill rows.
    std::vector<std::vector<int32_t>> blocks;
    model::ForwardBatch first, second;
    for (const auto& p : prompts) {
        blocks.push_back(h.blocks_for(int32_t(p.size())));
        const int32_t half = int32_t(p.size()) / 2;
        if (half > 0) {
            engine::add_plain_sequence(first, {p.begin(), p.begin() + half}, 0, blocks.back(), kBlock, 0);
        }
        engine::add_plain_sequence(second, {p.begin() + half, p.end()}, half, blocks.back(), kBlock, 2);
    }
    std::vector<float> ignored, batched;
    ASSERT_TRUE(h.model->forward(first, *h.kv, &ignored).ok());
    ASSERT_TRUE(h.model->forward(second, *h.kv, &batched).ok());
    for (auto& b : blocks) h.pool->unref_all(b);
    std::vector<float> alone;
    for (const auto& p : prompts) {
        auto logits = h.prefill_logits(p, int32_t(p.size()));
        const size_t vocab_sz = size_t(vocab), half = p.size() / 2;
        alone.insert(alone.end(), logits.begin() + half * vocab_sz, logits.end());
    }
    testing::expect_close(batched, alone, 1e-4, 1e-1, "batched vs alone");
}

TEST(ModelForward, QuantizedWeightsLoadAndStayClose) {
    auto o = llama_options();
    const std::string f32 = testing::synthetic_model_path(o, "llama");
    o.weight_type = loader::GgmlType::kQ8_0;
    const std::string q8 = testing::synthetic_model_path(o, "llama-q8");
    Harness a(f32, backend::make_cpu_backend(2)), b(q8, backend::make_cpu_backend(2));
    std::mt19937_64 rng(testing::test_seed() + 3);
    const auto tokens = random_tokens(rng, 20, a.model->config().vocab_size);
    // Q8_0 keeps ~2.5 significant digits per weight: logits agree loosely, never exactly.
    testing::expect_close(b.prefill_logits(tokens, 20), a.prefill_logits(tokens, 20), 0.1, 1.0, "q8 vs f32");
}

// F16, BF16, Q5_0, Q5_1 and the K-quants run in place (typed row kernels); the reference
// backend quantizes activations the same way, so only float summation order differs.
// Each row of `got` agrees with the same row of `want` in direction and within a share of its
// scale (see InPlaceWeightTypesMatchReferenceBackend for why not element-wise).
void expect_rows_agree(const std::vector<float>& got, const std::vector<float>& want, int32_t row_len,
                       const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t r = 0; r * row_len < got.size(); ++r) {
        double dot = 0, gg = 0, ww = 0, max_diff = 0, scale = 0;
        for (int32_t i = 0; i < row_len; ++i) {
            const double g = got[r * row_len + i], w = want[r * row_len + i];
            ASSERT_FALSE(std::isnan(g)) << what;
            dot += g * w;
            gg += g * g;
            ww += w * w;
            max_diff = std::max(max_diff, std::abs(g - w));
            scale = std::max(scale, std::abs(w));
        }
        EXPECT_GE(dot / std::sqrt(gg * ww), 0.999) << what << " row " << r;
        EXPECT_LE(max_diff, 0.05 * scale) << what << " row " << r;
    }
}

TEST(ModelForward, InPlaceWeightTypesMatchReferenceBackend) {
    for (auto t : {loader::GgmlType::kF16, loader::GgmlType::kBF16, loader::GgmlType::kQ5_0, loader::GgmlType::kQ5_1,
                   loader::GgmlType::kQ2_K, loader::GgmlType::kQ3_K, loader::GgmlType::kQ4_K, loader::GgmlType::kQ5_K,
                   loader::GgmlType::kQ6_K}) {
        auto o = llama_options();
        o.weight_type = t;
        o.hidden = 256;  // K-quant super-blocks
        o.ffn = 512;
        const std::string path = testing::synthetic_model_path(o, std::string("llama-") + loader::ggml_type_name(t));
        Harness cpu(path, backend::make_cpu_backend(2)), ref(path, backend::make_reference_backend());
        std::mt19937_64 rng(testing::test_seed() + 4);
        const auto tokens = random_tokens(rng, 9, cpu.model->config().vocab_size);
        // Both backends quantize activations to 8 bits, so a float difference in summation order
        // can flip one rounding and move later logits by a quantization step: element-wise
        // tolerances fail on random models at some seeds. Each position's logits must still
        // agree as a distribution: cosine >= 0.999 and every logit within 5% of the row's range.
        expect_rows_agree(cpu.prefill_logits(tokens, 9), ref.prefill_logits(tokens, 9), cpu.model->config().vocab_size,
                          loader::ggml_type_name(t));
    }
}

// Fills `blocks` with the KV of `tokens` at positions [0, n) (no logits).
void encode(Harness& h, const std::vector<int32_t>& tokens, const std::vector<int32_t>& blocks) {
    ForwardBatch b;
    engine::add_plain_sequence(b, tokens, 0, blocks, kBlock, 0);
    std::vector<float> logits;
    ASSERT_TRUE(h.model->forward(b, *h.kv, &logits).ok());
}

// Rows measuring `doc` (cached in `doc_blocks`, keys rotated from `stored_base`) placed at
// logical `start` after `before` (cached in `before_blocks` at 0), compared with the copy in
// `compare_blocks` whose keys are rotated from `compare_base`.
ForwardBatch deviation_rows(int32_t before, const std::vector<int32_t>& before_blocks, const std::vector<int32_t>& doc,
                            const std::vector<int32_t>& doc_blocks, const std::vector<int32_t>& compare_blocks,
                            int32_t compare_base) {
    ForwardBatch b;
    const int32_t n = int32_t(doc.size());
    if (before > 0) {
        b.spans.push_back({0, before, 0, 0});
        b.block_ids.insert(b.block_ids.end(), before_blocks.begin(), before_blocks.end());
    }
    b.spans.push_back({int32_t(b.block_ids.size()), n, before, 0});
    b.block_ids.insert(b.block_ids.end(), doc_blocks.begin(), doc_blocks.end());
    b.seqs.push_back({0, n, 0, int32_t(b.spans.size())});
    for (int32_t t = 0; t < n; ++t) {
        b.token_ids.push_back(doc[size_t(t)]);
        b.positions.push_back(before + t);
        b.store_positions.push_back(compare_base + t);
        const int32_t at = compare_base + t;
        b.slot_mapping.push_back(compare_blocks[size_t(at / kBlock)] * kBlock + at % kBlock);
    }
    return b;
}

// CacheBlend's measurement: a document token placed after another document, with it in view,
// gets layer-1 keys and values equal to full attention's over the two (deviation ~0 against
// that copy) and far from its own encoded-alone copy; a document with nothing before it equals
// its alone copy. On the CPU and the reference backend, which agree. Nothing is written.
TEST(ModelForward, KvDeviationIsTheDistanceTheContextMovedEachToken) {
    const std::string path = testing::synthetic_model_path(llama_options(), "llama");
    std::vector<float> cpu_devs;
    for (const bool reference : {false, true}) {
        Harness h(path, reference ? backend::make_reference_backend() : backend::make_cpu_backend(2));
        std::mt19937_64 rng(testing::test_seed() + 5);
        const int32_t vocab = h.model->config().vocab_size;
        const auto a = random_tokens(rng, 20, vocab), b = random_tokens(rng, 24, vocab);
        std::vector<int32_t> ab = a;
        ab.insert(ab.end(), b.begin(), b.end());
        const auto a_blocks = h.blocks_for(20), b_blocks = h.blocks_for(24), full = h.blocks_for(44);
        encode(h, a, a_blocks);
        encode(h, b, b_blocks);
        encode(h, ab, full);
        const std::vector<float> pool_before(
            static_cast<const float*>(h.kv->k(1)),
            static_cast<const float*>(h.kv->k(1)) + h.kv->shape().k_bytes_per_block() / 4 * h.kv->shape().num_blocks);

        std::vector<float> alone, in_context, first;
        ASSERT_TRUE(
            h.model->measure_kv_deviation(deviation_rows(20, a_blocks, b, b_blocks, b_blocks, 0), *h.kv, &alone).ok());
        // Compared with full attention's copy, keys in its frame (positions 20..43).
        ASSERT_TRUE(
            h.model->measure_kv_deviation(deviation_rows(20, a_blocks, b, b_blocks, full, 20), *h.kv, &in_context)
                .ok());
        ASSERT_TRUE(h.model->measure_kv_deviation(deviation_rows(0, {}, a, a_blocks, a_blocks, 0), *h.kv, &first).ok());
        ASSERT_EQ(alone.size(), 24u);
        double moved = 0;
        for (const float d : alone) {
            EXPECT_GT(d, 0.0f);
            moved += d / 24.0;
        }
        for (size_t t = 0; t < in_context.size(); ++t) EXPECT_LT(in_context[t], 1e-6 * moved) << "token " << t;
        for (size_t t = 0; t < first.size(); ++t) EXPECT_LT(first[t], 1e-6 * moved) << "token " << t;
        const std::vector<float> pool_after(static_cast<const float*>(h.kv->k(1)),
                                            static_cast<const float*>(h.kv->k(1)) + pool_before.size());
        EXPECT_EQ(pool_after, pool_before) << "measuring wrote the pool";
        if (!reference) {
            cpu_devs = alone;
        } else {
            testing::expect_close(cpu_devs, alone, 1e-3, 1e-4, "cpu vs reference deviation");
        }
    }
}

TEST(ModelForward, BadTokenIdIsAnErrorNotACrash) {
    const std::string path = testing::synthetic_model_path(llama_options(), "llama");
    Harness h(path, backend::make_cpu_backend(1));
    auto blocks = h.blocks_for(2);
    ForwardBatch batch;
    engine::add_plain_sequence(batch, {1, h.model->config().vocab_size}, 0, blocks, kBlock, 1);
    std::vector<float> logits;
    EXPECT_EQ(h.model->forward(batch, *h.kv, &logits).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lazyattn
