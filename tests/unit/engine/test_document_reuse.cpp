// Document reuse settings (engine::DocumentReuse) on a tiny random model, fresh random tokens each
// run: anchored encoding is exact causal attention for one document and keeps lazy == lazy-k ==
// block-attn for many; recomputing every document token is exact causal attention for any
// number of documents, and partial recomputation agrees across the segment modes without
// touching the cached copy; an anchored document is one copy per preamble, reused at any slot;
// rescaling is applied, agrees across the segment modes and never mixes with plain cached tails;
// requests that cannot take a setting are refused; nothing leaks, also under preemption (damped
// document sinks: test_damped_sinks.cpp).
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

DocumentReuse anchored() {
    DocumentReuse r;
    r.anchored = true;
    return r;
}

// [preamble][doc][question] with the document encoded after the preamble is exactly causal
// attention over the flattened prompt, whatever the lengths (block boundaries included).
TEST(DocumentReuse, OneAnchoredDocumentIsFullAttention) {
    Tokens tok(1);
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn}) {
        auto seg = make_engine(mode), none = make_engine(CacheMode::kNone);
        for (auto [p, d] : {std::pair{1, 1}, std::pair{7, 16}, std::pair{16, 17}, std::pair{23, 53}}) {
            auto req = request_of(tok.make(p), {tok.make(d)}, tok.make(9), anchored());
            for (int pass = 0; pass < 2; ++pass) {  // computed, then read from the cache
                auto a = seg->tail_logits(req), b = none->tail_logits(req);
                ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string() << b.status().to_string();
                testing::expect_close(*a, std::vector<float>(b->end() - a->size(), b->end()), 1e-4, 1.0,
                                      (std::string(cache_mode_name(mode)) + " anchored vs none").c_str());
            }
            // The plain encoding differs (the document did not see the preamble), unless the two
            // are one token and the same token: attending to two equal values is reading one.
            if (p == 1 && d == 1 && req.segments[0] == req.segments[1]) continue;
            RagRequest plain = req;
            plain.reuse = {};
            auto c = seg->tail_logits(plain), b = none->tail_logits(req);
            EXPECT_GT(testing::max_relative_difference(*c, std::vector<float>(b->end() - c->size(), b->end())), 1e-3);
        }
        // A document with the preamble's very tokens is still its own (anchored) encoding, not a
        // repeat of the preamble's plain one (once drawn by chance: a 1-token preamble and
        // document from a small vocabulary).
        for (const int32_t n : {1, 20}) {
            const auto same = tok.make(n);
            auto lone = request_of(same, {same}, tok.make(4), anchored());
            auto c = seg->tail_logits(lone), e = none->tail_logits(lone);
            ASSERT_TRUE(c.ok() && e.ok());
            testing::expect_close(*c, std::vector<float>(e->end() - c->size(), e->end()), 1e-4, 1.0,
                                  (std::string(cache_mode_name(mode)) + " document equal to the preamble").c_str());
        }
        expect_pool_whole(*seg);
    }
}

DocumentReuse recompute(int32_t n, bool anchor = false) {
    DocumentReuse r;
    r.recompute_tokens = n;
    r.anchored = anchor;
    return r;
}

DocumentReuse sparse(float share, bool anchor = false) {
    DocumentReuse r;
    r.recompute_share = share;
    r.recompute_select = RecomputeSelect::kRandom;
    r.anchored = anchor;
    return r;
}

// Document tokens a request recomputes under `reuse` (the preamble is not a document).
int32_t recomputed(const std::vector<std::vector<int32_t>>& docs, const DocumentReuse& reuse) {
    int32_t n = 0;
    for (const auto& d : docs) n += recompute_row_count(reuse, int32_t(d.size()), 16);
    return n;
}

// A budget longer than every document recomputes them all with the whole prompt before them in
// view: the tail then reads exactly the KV of causal attention over the flattened prompt. Both
// ways of reading recomputed rows: the first tokens as spans of their own, and every token as a
// private row overriding the shared one (a 100% sample).
TEST(DocumentReuse, RecomputingEveryTokenIsFullAttention) {
    Tokens tok(7);
    auto none = make_engine(CacheMode::kNone);
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn}) {
        for (const DocumentReuse& all : {recompute(4096), sparse(1.0f)}) {
            auto seg = make_engine(mode);
            std::vector<std::vector<int32_t>> docs{tok.make(17), tok.make(1), tok.make(40), tok.make(16)};
            auto req = request_of(tok.make(9), docs, tok.make(11), all);
            for (int pass = 0; pass < 2; ++pass) {
                auto a = seg->run(req);
                ASSERT_TRUE(a.ok()) << a.status().to_string();
                EXPECT_EQ(a->stats.recomputed_tokens, 17 + 1 + 40 + 16);
                auto la = seg->tail_logits(req), lb = none->tail_logits(req);
                ASSERT_TRUE(la.ok() && lb.ok());
                testing::expect_close(*la, std::vector<float>(lb->end() - la->size(), lb->end()), 1e-4, 1.0,
                                      (std::string(cache_mode_name(mode)) + " " + all.name() + " vs none").c_str());
                std::shuffle(req.segments.begin() + 1, req.segments.end(), tok.rng());
            }
            expect_pool_whole(*seg);
        }
    }
}

DocumentReuse by_query(float share, RecomputeSelect select = RecomputeSelect::kQuery, bool anchor = false) {
    DocumentReuse r = sparse(share, anchor);
    r.recompute_select = select;
    return r;
}

// The choices of one request (RagRequest::choice_group) recompute their rows once: the first
// admitted computes them, the others read its patch blocks. Greedy choices then generate exactly
// what one request alone does; a leader cancelled mid-way hands its rows to a follower, which
// finishes them. Every selection (first, sparse sample, question, deviation), in lazy.
TEST(DocumentReuse, TheChoicesOfARequestRecomputeOnce) {
    Tokens tok(29);
    const std::vector<DocumentReuse> reuses = {recompute(24), sparse(0.5f), by_query(0.4f),
                                               by_query(0.3f, RecomputeSelect::kDeviation)};
    for (const DocumentReuse& reuse : reuses) {
        for (int cancel_leader = 0; cancel_leader < 2; ++cancel_leader) {
            const std::string what = reuse.name() + (cancel_leader ? " (leader cancelled)" : "");
            std::vector<std::vector<int32_t>> docs{tok.make(37), tok.make(21), tok.make(50)};
            RagRequest req = request_of(tok.make(9), docs, tok.make(13), reuse);
            auto alone_engine = make_engine(CacheMode::kLazy);
            auto alone = alone_engine->run(req);
            ASSERT_TRUE(alone.ok()) << alone.status().to_string();
            ASSERT_GT(alone->stats.recomputed_tokens, 0) << what;

            auto engine = make_engine(CacheMode::kLazy);
            EngineCore& core = engine->core();
            req.choice_group = 7;
            std::vector<std::shared_ptr<RequestHandle>> choices;
            for (int i = 0; i < 4; ++i) choices.push_back(core.add(req).value());
            if (cancel_leader) {
                for (int i = 0; i < 2; ++i) core.step();  // the leader is part-way through its rows
                choices[0]->cancel();
            }
            for (int step = 0; step < 10000 && !core.idle(); ++step) core.step();
            ASSERT_TRUE(core.idle()) << what << ": a choice never finished";
            int64_t recomputed = 0;
            for (size_t i = cancel_leader; i < choices.size(); ++i) {
                const RagResult r = choices[i]->wait();
                ASSERT_EQ(r.finish_reason, engine::FinishReason::kLength) << what << " " << r.status.to_string();
                EXPECT_EQ(r.token_ids, alone->token_ids) << what << ": choice " << i;
                recomputed += r.stats.recomputed_tokens;
            }
            if (cancel_leader) recomputed += choices[0]->wait().stats.recomputed_tokens;
            // Once over all choices; a leader cancelled mid-way: its rows plus the heir's rest
            // (a measurement in flight restarts, so at most twice).
            if (!cancel_leader) {
                EXPECT_EQ(recomputed, alone->stats.recomputed_tokens) << what;
            }
            EXPECT_LE(recomputed, 2 * alone->stats.recomputed_tokens) << what;
            expect_pool_whole(*engine);
        }
    }
}

// Selection by the question, both ways, and by KV deviation: a 100% budget recomputes every
// token after the measurement, so the tail (run again on top) reads exactly causal attention
// over the flattened prompt; the chosen rows are counted.
TEST(DocumentReuse, QuerySelectedRecomputeOfEverythingIsFullAttention) {
    Tokens tok(11);
    auto none = make_engine(CacheMode::kNone);
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn}) {
        for (const RecomputeSelect select : {RecomputeSelect::kQuery, RecomputeSelect::kQueryAll,
                                             RecomputeSelect::kDeviation, RecomputeSelect::kFirstQuery}) {
            auto seg = make_engine(mode);
            std::vector<std::vector<int32_t>> docs{tok.make(17), tok.make(1), tok.make(40), tok.make(16)};
            auto req = request_of(tok.make(9), docs, tok.make(11), by_query(1.0f, select));
            for (int pass = 0; pass < 2; ++pass) {
                auto run = seg->run(req);
                ASSERT_TRUE(run.ok()) << run.status().to_string();
                EXPECT_EQ(run->stats.recomputed_tokens, 17 + 1 + 40 + 16);
                auto la = seg->tail_logits(req), lb = none->tail_logits(req);
                ASSERT_TRUE(la.ok() && lb.ok()) << la.status().to_string();
                testing::expect_close(
                    *la, std::vector<float>(lb->end() - la->size(), lb->end()), 1e-4, 1.0,
                    (std::string(cache_mode_name(mode)) + " " + req.reuse.name() + " vs none").c_str());
                std::shuffle(req.segments.begin() + 1, req.segments.end(), tok.rng());
            }
            expect_pool_whole(*seg);
        }
    }
}

// A partial budget chosen by the question or by KV deviation: the same rows in every segment
// mode (measured on the same KV), so lazy == lazy-k == block-attn; each document gets its own budget
// (@query) or the documents share the total (@query-all); the probe runs the prompt tail once
// more; the cache is never written.
TEST(DocumentReuse, MeasuredSelectionsAgreeAcrossModes) {
    Tokens tok(12);
    auto lazy = make_engine(CacheMode::kLazy), lazy_k = make_engine(CacheMode::kLazyK),
         block = make_engine(CacheMode::kBlockAttn);
    const auto preamble = tok.make(13);
    std::vector<std::vector<int32_t>> docs{tok.make(35), tok.make(9), tok.make(16), tok.make(50)};
    for (const DocumentReuse& reuse :
         {by_query(0.25f), by_query(0.1f, RecomputeSelect::kQueryAll), by_query(0.3f, RecomputeSelect::kQuery, true),
          by_query(0.2f, RecomputeSelect::kDeviation), by_query(0.3f, RecomputeSelect::kDeviation, true),
          by_query(0.25f, RecomputeSelect::kFirstQuery)}) {
        auto req = request_of(preamble, docs, tok.make(10), reuse);
        auto a = lazy->tail_logits(req), b = lazy_k->tail_logits(req), c = block->tail_logits(req);
        ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().to_string();
        testing::expect_close(*b, *a, 1e-4, 1.0, (reuse.name() + ": lazy-k vs lazy").c_str());
        testing::expect_close(*c, *a, 1e-4, 1.0, (reuse.name() + ": block-attn vs lazy").c_str());
        auto ra = lazy->run(req);
        ASSERT_TRUE(ra.ok());
        EXPECT_EQ(ra->stats.recomputed_tokens, recomputed(docs, reuse));
        // Prompt work: the documents (cached after the first call), the probe (by the question)
        // or the measured document tokens (by deviation, two layers each: counted apart), the
        // chosen rows and the tail: by deviation, its last token only (tail_logits computed the
        // same tail just before; its first 9 rows are copied), by the question all of it (the
        // probe writes every tail row).
        const bool by_deviation = reuse.recompute_select == RecomputeSelect::kDeviation;
        EXPECT_EQ(ra->stats.prefill_tokens,
                  (by_deviation ? 0 : 10) + recomputed(docs, reuse) + (by_deviation ? 1 : 10));
        EXPECT_EQ(ra->stats.deviation_rows, by_deviation ? 35 + 9 + 16 + 50 : 0);
        // Another selection than the first tokens or a sample (the tail's attention is not
        // uniform): the answers differ from @random's at the same budget.
        DocumentReuse sampled = reuse;
        sampled.recompute_select = RecomputeSelect::kRandom;
        auto d = lazy->tail_logits(request_of(preamble, docs, req.tail, sampled));
        ASSERT_TRUE(d.ok());
        EXPECT_GT(testing::max_relative_difference(*d, *a), 1e-6) << reuse.name();
    }
    auto plain = request_of(preamble, docs, tok.make(6), {});
    auto cached = lazy->tail_logits(plain), fresh = make_engine(CacheMode::kLazy)->tail_logits(plain);
    testing::expect_close(*cached, *fresh, 1e-5, 1.0, "plain after @query vs fresh");
    expect_pool_whole(*lazy);
    expect_pool_whole(*lazy_k);
    expect_pool_whole(*block);
}

TEST(DocumentReuse, SelectionByMassTakesTheHeaviestTokens) {
    const std::vector<std::vector<float>> mass{{0.1f, 0.5f, 0.2f, 0.5f}, {0.9f, 0.0f}, {0.3f, 0.05f, 0.4f}};
    // Per document: its own budget; equal mass goes to the earlier token.
    EXPECT_EQ(select_by_mass(RecomputeSelect::kQuery, mass, {2, 1, 1}),
              (std::vector<std::vector<int32_t>>{{1, 3}, {0}, {2}}));
    // Together: the 4 heaviest of all (0.9, 0.5, 0.5, 0.4), wherever they are.
    EXPECT_EQ(select_by_mass(RecomputeSelect::kQueryAll, mass, {2, 1, 1}),
              (std::vector<std::vector<int32_t>>{{1, 3}, {0}, {2}}));
    EXPECT_EQ(select_by_mass(RecomputeSelect::kQueryAll, mass, {0, 1, 2}),
              (std::vector<std::vector<int32_t>>{{1, 3}, {0}, {}}));
    EXPECT_EQ(select_by_mass(RecomputeSelect::kQuery, mass, {9, 0, 3}),
              (std::vector<std::vector<int32_t>>{{0, 1, 2, 3}, {}, {0, 1, 2}}));
    // First tokens, then by mass: half of each budget (rounded up) to the first tokens, the rest
    // to the heaviest of the others; KV deviation ranks as the mass does.
    EXPECT_EQ(select_by_mass(RecomputeSelect::kFirstQuery, mass, {3, 1, 2}),
              (std::vector<std::vector<int32_t>>{{0, 1, 3}, {0}, {0, 2}}));
    EXPECT_EQ(select_by_mass(RecomputeSelect::kFirstQuery, mass, {4, 2, 9}),
              (std::vector<std::vector<int32_t>>{{0, 1, 2, 3}, {0, 1}, {0, 1, 2}}));
    EXPECT_EQ(select_by_mass(RecomputeSelect::kDeviation, mass, {2, 1, 1}),
              select_by_mass(RecomputeSelect::kQuery, mass, {2, 1, 1}));
}

// An anchored document's cached KV is the KV of causal attention over [preamble][document], so
// recomputing any subset of its tokens rewrites rows with the values they already had: the tail
// must read exactly full attention whatever the sample. This checks that the private rows sit
// in the document's rotation frame and are read where the shared ones were, in every mode.
TEST(DocumentReuse, SparseRecomputeOfAnAnchoredDocumentIsFullAttention) {
    Tokens tok(10);
    auto none = make_engine(CacheMode::kNone);
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn}) {
        auto seg = make_engine(mode);
        for (const float share : {0.05f, 0.3f, 0.7f}) {
            auto req = request_of(tok.make(12), {tok.make(61)}, tok.make(9), sparse(share, true));
            for (int pass = 0; pass < 2; ++pass) {  // the document computed, then cached
                auto run = seg->run(req);
                ASSERT_TRUE(run.ok()) << run.status().to_string();
                EXPECT_EQ(run->stats.recomputed_tokens, recomputed({req.segments[1]}, req.reuse));
                auto a = seg->tail_logits(req), b = none->tail_logits(req);
                ASSERT_TRUE(a.ok() && b.ok());
                testing::expect_close(*a, std::vector<float>(b->end() - a->size(), b->end()), 1e-4, 1.0,
                                      (std::string(cache_mode_name(mode)) + " " + req.reuse.name()).c_str());
            }
        }
        expect_pool_whole(*seg);
    }
}

TEST(DocumentReuse, PartialRecomputeAgreesAcrossModesAndLeavesTheCacheAlone) {
    Tokens tok(8);
    auto lazy = make_engine(CacheMode::kLazy), lazy_k = make_engine(CacheMode::kLazyK),
         block = make_engine(CacheMode::kBlockAttn);
    const auto preamble = tok.make(13);
    std::vector<std::vector<int32_t>> docs{tok.make(35), tok.make(9), tok.make(16), tok.make(50)};
    DocumentReuse seven = sparse(0.0f, true);
    seven.recompute_tokens = 7;
    DocumentReuse first_share = sparse(0.3f);
    first_share.recompute_select = RecomputeSelect::kFirst;
    for (const DocumentReuse& reuse :
         {recompute(1), recompute(16, true), recompute(20), sparse(0.3f), seven, first_share}) {
        auto req = request_of(preamble, docs, tok.make(10), reuse);
        for (int pass = 0; pass < 2; ++pass) {
            auto a = lazy->tail_logits(req), b = lazy_k->tail_logits(req), c = block->tail_logits(req);
            ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().to_string();
            testing::expect_close(*b, *a, 1e-4, 1.0, (reuse.name() + ": lazy-k vs lazy").c_str());
            testing::expect_close(*c, *a, 1e-4, 1.0, (reuse.name() + ": block-attn vs lazy").c_str());
            auto ra = lazy->run(req), rc = block->run(req);
            ASSERT_TRUE(ra.ok() && rc.ok());
            EXPECT_EQ(ra->token_ids, rc->token_ids);
            // Blocks of 16: budgets 1 and 16 recompute 16 tokens of each long document, 20
            // rounds to 32; a 9-token document is recomputed whole. Samples are not rounded:
            // 30% is ceil(0.3 n) of each document, and a count of 7 is 7 of each (all longer).
            if (reuse_splits_spans(reuse)) {
                const int32_t per = reuse.recompute_tokens > 16 ? 32 : 16;
                EXPECT_EQ(ra->stats.recomputed_tokens, per + 9 + 16 + per);
            } else if (reuse.recompute_share > 0.0) {
                EXPECT_EQ(ra->stats.recomputed_tokens, 11 + 3 + 5 + 15);
            } else {
                EXPECT_EQ(ra->stats.recomputed_tokens, 7 * 4);
            }
            EXPECT_EQ(ra->stats.recomputed_tokens, recomputed(docs, reuse));
            std::shuffle(req.segments.begin() + 1, req.segments.end(), tok.rng());
        }
    }
    // The cached documents were never overwritten: a plain request reads what a fresh engine
    // computes.
    auto plain = request_of(preamble, docs, tok.make(6), {});
    auto cached = lazy->tail_logits(plain), fresh = make_engine(CacheMode::kLazy)->tail_logits(plain);
    testing::expect_close(*cached, *fresh, 1e-5, 1.0, "plain after recompute vs fresh");
    expect_pool_whole(*lazy);
    expect_pool_whole(*lazy_k);
    expect_pool_whole(*block);
}

TEST(DocumentReuse, AnchoredAndRescaledAgreeAcrossSegmentModes) {
    Tokens tok(2);
    DocumentReuse both = anchored();
    both.logit_scale = 0.8f;
    both.logit_bias = -0.7f;
    DocumentReuse rescaled;
    rescaled.logit_bias = 1.3f;
    auto lazy = make_engine(CacheMode::kLazy), lazy_k = make_engine(CacheMode::kLazyK),
         block = make_engine(CacheMode::kBlockAttn);
    for (const DocumentReuse& reuse : {anchored(), both, rescaled}) {
        const auto twice = tok.make(20);
        std::vector<std::vector<int32_t>> docs{tok.make(17), twice, tok.make(1), tok.make(40), twice};
        auto req = request_of(tok.make(11), docs, tok.make(13), reuse);
        for (int pass = 0; pass < 3; ++pass) {
            auto a = lazy->tail_logits(req), b = lazy_k->tail_logits(req), c = block->tail_logits(req);
            ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().to_string();
            testing::expect_close(*b, *a, 1e-4, 1.0, (reuse.name() + ": lazy-k vs lazy").c_str());
            testing::expect_close(*c, *a, 1e-4, 1.0, (reuse.name() + ": block-attn vs lazy").c_str());
            auto ra = lazy->run(req), rb = lazy_k->run(req), rc = block->run(req);
            ASSERT_TRUE(ra.ok() && rb.ok() && rc.ok());
            EXPECT_EQ(ra->token_ids, rb->token_ids);
            EXPECT_EQ(ra->token_ids, rc->token_ids);
            std::shuffle(req.segments.begin() + 1, req.segments.end(), tok.rng());  // documents move
        }
    }
    expect_pool_whole(*lazy);
    expect_pool_whole(*lazy_k);
    expect_pool_whole(*block);
}

TEST(DocumentReuse, AnAnchoredDocumentIsOneCopyPerPreambleReusedAtAnySlot) {
    Tokens tok(3);
    auto e = make_engine(CacheMode::kLazy);
    const auto preamble = tok.make(12), a = tok.make(30), b = tok.make(18);
    ASSERT_TRUE(e->run(request_of(preamble, {a, b}, tok.make(5), anchored())).ok());
    const int64_t jobs = e->scheduler().stats().segment_jobs;
    EXPECT_EQ(jobs, 3);  // preamble, a, b
    // Reordered, another question: every segment is a hit, and the answer is the one a fresh
    // engine gives (the cached copy is the same KV a new computation would write).
    auto req = request_of(preamble, {b, a}, tok.make(7), anchored());
    auto cached = e->tail_logits(req);
    EXPECT_EQ(e->scheduler().stats().segment_jobs, jobs);
    auto fresh = make_engine(CacheMode::kLazy)->tail_logits(req);
    ASSERT_TRUE(cached.ok() && fresh.ok());
    testing::expect_close(*cached, *fresh, 1e-5, 1.0, "cached vs fresh anchored documents");
    // The same documents after another preamble are other KV: computed again (and the plain
    // encoding is a third copy).
    ASSERT_TRUE(e->run(request_of(tok.make(12), {a, b}, tok.make(5), anchored())).ok());
    EXPECT_EQ(e->scheduler().stats().segment_jobs, jobs + 3);
    ASSERT_TRUE(e->run(request_of(preamble, {a, b}, tok.make(5), {})).ok());
    EXPECT_EQ(e->scheduler().stats().segment_jobs, jobs + 5);
    expect_pool_whole(*e);
}

TEST(DocumentReuse, RescaledTailsNeverReadPlainCachedTails) {
    Tokens tok(4);
    auto e = make_engine(CacheMode::kLazy);
    auto plain = request_of(tok.make(8), {tok.make(20), tok.make(33)}, tok.make(40), {});
    ASSERT_TRUE(e->run(plain).ok());  // its tail blocks are now cached
    RagRequest scaled = plain;
    scaled.reuse.logit_bias = -2.0f;
    auto got = e->run(scaled);
    auto want = make_engine(CacheMode::kLazy)->run(scaled);
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_EQ(got->token_ids, want->token_ids);
    auto a = e->tail_logits(scaled), b = e->tail_logits(plain);
    EXPECT_GT(testing::max_relative_difference(*a, *b), 1e-3) << "the bias changed nothing";
    expect_pool_whole(*e);
}

// A model's block fine-tuning label is read at start-up: a huge wrong value is refused quoting
// only its beginning (the refusal goes to the log and to `info`).
TEST(DocumentReuse, AHugeFineTuneLabelIsQuotedNotEchoed) {
    loader::GgufWriter w;
    w.add_string(std::string(kBlockFinetunedKey), std::string(16 << 20, 'x'));
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto file = loader::GgufFile::parse(bytes.data(), bytes.size());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto layout = block_finetuned_layout(**file);
    ASSERT_FALSE(layout.ok());
    EXPECT_LT(layout.status().message().size(), 256u) << layout.status().message().substr(0, 300);
    EXPECT_NE(layout.status().message().find("(16777216 bytes)"), std::string::npos);
}

// What a server that names no preset and no reuse runs: a block fine-tuned model's own layout
// under fast, any other model the default preset (balanced: conditioned copies where they exist
// and damped sinks; every preset's reuse is one a request may take).
TEST(DocumentReuse, TheServingDefaultIsBalancedUnlessTheModelWasFineTunedForALayout) {
    auto default_of = [](const char* layout) {
        loader::GgufWriter w;
        if (layout) w.add_string(std::string(kBlockFinetunedKey), layout);
        const std::vector<uint8_t> bytes = w.to_bytes();
        auto file = loader::GgufFile::parse(bytes.data(), bytes.size());
        EXPECT_TRUE(file.ok());
        return model_serving_default(**file);
    };
    auto plain_model = default_of(nullptr);
    ASSERT_TRUE(plain_model.ok()) << plain_model.status().to_string();
    EXPECT_EQ(plain_model->preset, QualityPreset::kBalanced);
    EXPECT_FALSE(plain_model->models_own);
    EXPECT_EQ(plain_model->reuse.name(), "neighbours=1@ready+damp=16:-2");
    for (const char* layout : {"plain", "anchored"}) {
        auto tuned = default_of(layout);
        ASSERT_TRUE(tuned.ok()) << tuned.status().to_string();
        EXPECT_EQ(tuned->preset, QualityPreset::kFast) << layout;
        EXPECT_TRUE(tuned->models_own) << layout;
        EXPECT_EQ(tuned->reuse.anchored, std::string(layout) == "anchored") << layout;
        EXPECT_FALSE(tuned->reuse.damps() || tuned->reuse.neighbours > 0) << layout;
    }
    EXPECT_FALSE(default_of("sideways").ok());
    for (QualityPreset p : {QualityPreset::kFast, QualityPreset::kBalanced, QualityPreset::kAccurate}) {
        EXPECT_TRUE(preset_document_reuse(p).validate().ok()) << quality_preset_name(p);
    }
    EXPECT_EQ(preset_document_reuse(QualityPreset::kAccurate).name(), "neighbours=1@ready+recompute=10%");
}

TEST(DocumentReuse, SettingsARequestCannotTakeAreRefused) {
    Tokens tok(5);
    auto e = make_engine(CacheMode::kLazy);
    RagRequest no_preamble;
    no_preamble.segments = {tok.make(10), tok.make(10)};
    no_preamble.tail = tok.make(3);
    no_preamble.reuse = anchored();
    auto r = e->run(no_preamble);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("preamble"), std::string::npos) << r.status().to_string();
    RagRequest hot = request_of(tok.make(4), {tok.make(5)}, tok.make(3), {});
    hot.reuse.logit_scale = 100.0f;
    EXPECT_EQ(e->run(hot).status().code(), StatusCode::kInvalidArgument);
    hot.reuse.logit_scale = std::nanf("");
    EXPECT_EQ(e->run(hot).status().code(), StatusCode::kInvalidArgument);
    EXPECT_FALSE(parse_document_reuse("anchor+bias=x").ok());
    EXPECT_FALSE(parse_document_reuse("anchor+recompute").ok());
    EXPECT_FALSE(parse_document_reuse("recompute=-3").ok());
    EXPECT_FALSE(parse_document_reuse("recompute=99999").ok());
    auto parsed = parse_document_reuse("anchor+scale=0.9+bias=-1+recompute=32");
    ASSERT_TRUE(parsed.ok());
    EXPECT_TRUE(parsed->anchored);
    EXPECT_FLOAT_EQ(parsed->logit_scale, 0.9f);
    EXPECT_FLOAT_EQ(parsed->logit_bias, -1.0f);
    EXPECT_EQ(parsed->recompute_tokens, 32);
    EXPECT_EQ(parse_document_reuse(parsed->name())->name(), parsed->name());
    // Shares and selections: "recompute=P%[@first|@random]", and the variant syntax around them.
    for (const char* bad :
         {"recompute=0%@random", "recompute=101%", "recompute=15%@best", "recompute=x%", "recompute=@random",
          "recompute=15%@", "recompute=nan%", "recompute=1e-300%", "recompute=0.001%@query"}) {
        EXPECT_FALSE(parse_document_reuse(bad).ok()) << bad;
    }
    auto share = parse_document_reuse("anchor+recompute=15%@random");
    ASSERT_TRUE(share.ok()) << share.status().to_string();
    EXPECT_DOUBLE_EQ(share->recompute_share, 0.15);
    EXPECT_EQ(share->recompute_select, RecomputeSelect::kRandom);
    EXPECT_EQ(share->name(), "anchor+recompute=15%@random");
    EXPECT_EQ(*parse_document_reuse(share->name()), *share);
    EXPECT_EQ(parse_document_reuse("recompute=8@first")->name(), "recompute=8");
    EXPECT_TRUE(parse_document_reuse("recompute=0.01%").ok());      // the smallest share taken
    EXPECT_TRUE(parse_document_reuse("recompute=0%")->is_plain());  // 0 is none, as "recompute=0"
    DocumentReuse tiny;
    tiny.recompute_share = 1e-30;  // refused, not read as no recompute
    EXPECT_FALSE(tiny.validate().ok());
    DocumentReuse both = *share;
    both.recompute_tokens = 4;
    EXPECT_FALSE(both.validate().ok());
    DocumentReuse unbudgeted;
    unbudgeted.recompute_select = RecomputeSelect::kRandom;
    EXPECT_FALSE(unbudgeted.validate().ok());
    auto variant = parse_reuse_variant("lazy-k:recompute=25%@random@q8_0");
    ASSERT_TRUE(variant.ok()) << variant.status().to_string();
    EXPECT_EQ(variant->mode, CacheMode::kLazyK);
    EXPECT_EQ(variant->reuse.recompute_select, RecomputeSelect::kRandom);
    ASSERT_TRUE(variant->kv_types.has_value());
    EXPECT_EQ(variant->kv_types->k, kernels::KvDtype::kQ8_0);
    auto no_kv = parse_reuse_variant("lazy:recompute=25%@random");
    ASSERT_TRUE(no_kv.ok());
    EXPECT_FALSE(no_kv->kv_types.has_value());
    EXPECT_FALSE(parse_reuse_variant("lazy:recompute=25%@q7").ok());
    EXPECT_EQ(parse_document_reuse("recompute=10%@query-all")->recompute_select, RecomputeSelect::kQueryAll);
    EXPECT_EQ(parse_document_reuse("recompute=15%@deviation")->recompute_select, RecomputeSelect::kDeviation);
    EXPECT_EQ(parse_document_reuse("recompute=15%@deviation")->name(), "recompute=15%@deviation");
    EXPECT_EQ(parse_document_reuse("recompute=10%@first-query")->recompute_select, RecomputeSelect::kFirstQuery);
    EXPECT_EQ(parse_reuse_variant("lazy:anchor+recompute=15%@query")->reuse.name(), "anchor+recompute=15%@query");
    EXPECT_FALSE(parse_document_reuse("recompute@query").ok());
    auto served = parse_reuse_variant("lazy-k:default@q8_0");
    ASSERT_TRUE(served.ok()) << served.status().to_string();
    EXPECT_TRUE(served->model_default);
    EXPECT_EQ(served->mode, CacheMode::kLazyK);
    EXPECT_TRUE(served->kv_types.has_value());
    EXPECT_FALSE(parse_reuse_variant("lazy:recompute=15%@random")->model_default);
    expect_pool_whole(*e);
}

// check() is where the ranges live (parsers check syntax and types only): it names the setting
// it refuses, so that each caller can name its own field for it.
TEST(DocumentReuse, CheckNamesTheSettingItRefuses) {
    const auto refused = [](auto set) {
        DocumentReuse r;
        set(r);
        const auto error = r.check();
        EXPECT_EQ(r.validate().ok(), !error.has_value());
        return error ? std::optional<ReuseSetting>(error->setting) : std::nullopt;
    };
    EXPECT_EQ(refused([](DocumentReuse&) {}), std::nullopt);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.logit_scale = 4.5f; }), ReuseSetting::kLogitScale);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.logit_scale = narrow_to_float(1e300); }), ReuseSetting::kLogitScale);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.logit_bias = -9.0f; }), ReuseSetting::kLogitBias);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.recompute_tokens = -1; }), ReuseSetting::kRecomputeTokens);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.recompute_tokens = DocumentReuse::kMaxRecomputeTokens + 1; }),
              ReuseSetting::kRecomputeTokens);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.recompute_tokens = DocumentReuse::kMaxRecomputeTokens; }), std::nullopt);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.recompute_share = 1e-300; }), ReuseSetting::kRecomputeShare);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.recompute_share = -0.5; }), ReuseSetting::kRecomputeShare);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.recompute_share = 1.0; }), std::nullopt);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.recompute_select = RecomputeSelect::kQuery; }),
              ReuseSetting::kRecomputeSelect);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.neighbours = DocumentReuse::kMaxNeighbours + 1; }),
              ReuseSetting::kNeighbours);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.neighbours = 1, r.anchored = true; }), ReuseSetting::kCombination);
    EXPECT_EQ(refused([](DocumentReuse& r) { r.recompute_tokens = 4, r.recompute_share = 0.5; }),
              ReuseSetting::kCombination);
}

// Many requests sharing a preamble and documents, in a pool too small for them together: the
// anchored jobs wait for the preamble's job, preemption drops and redoes them, and every output
// equals the output of the request alone.
TEST(DocumentReuse, AnchoredRequestsUnderMemoryPressure) {
    Tokens tok(6);
    const auto preamble = tok.make(21);
    std::vector<std::vector<int32_t>> docs;
    for (int i = 0; i < 8; ++i) docs.push_back(tok.make(10 + int32_t(tok.rng()() % 40)));
    std::vector<RagRequest> reqs;
    for (int i = 0; i < 10; ++i) {
        std::vector<std::vector<int32_t>> pick;
        for (int j = 0; j < 3; ++j) pick.push_back(docs[tok.rng()() % docs.size()]);
        // Anchored alone, and anchored with recomputed first blocks.
        reqs.push_back(request_of(preamble, pick, tok.make(3 + int32_t(tok.rng()() % 10)),
                                  i % 2 ? anchored() : recompute(16, true)));
        reqs.back().max_tokens = 20;
    }
    std::vector<std::vector<int32_t>> want;
    {
        auto alone = make_engine(CacheMode::kLazy);
        for (const auto& r : reqs) want.push_back(alone->run(r)->token_ids);
    }
    EngineConfig c = config(CacheMode::kLazy);
    c.kv_num_blocks = 30;
    EngineCore s(*tiny_model().model, *tiny_model().tokenizer, c);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& r : reqs) handles.push_back(*s.add(r));
    while (s.step()) {
    }
    for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(handles[i]->wait().token_ids, want[i]) << "request " << i;
    std::printf("[anchored under pressure] %lld preemptions, %lld segment jobs\n",
                (long long)s.scheduler().stats().preemptions, (long long)s.scheduler().stats().segment_jobs);
    s.scheduler().check_integrity();
    EXPECT_EQ(s.scheduler().kv().kv_cache().num_free(), s.scheduler().kv().kv_cache().pool().num_blocks());
}

}  // namespace
}  // namespace lazyattn::engine
