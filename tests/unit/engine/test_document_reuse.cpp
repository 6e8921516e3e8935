// Document reuse settings (engine::DocumentReuse) on a tiny random model, fresh random tokens each
// run: anchored encoding is exact causal attention for one document and keeps lazy == lazy-k ==
// block-attn for many; recomputing every document token is exact causal attention for any
// number of documents, and partial recomputation agrees across the segment modes without
// touching the cached copy; an anchored document is one copy per preamble, reused at any slot;
// rescaling is applied, agrees across the segment modes and never mixes with plain cached tails;
// requests that cannot take a setting are refused; nothing leaks, also under preemption.
#include <algorithm>

#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::engine {
namespace {

LoadedModel& tiny_model() {
    static LoadedModel lm = [] {
        synthetic::SyntheticModelOptions o;
        o.seed = 9;
        auto m = load_model(testing::synthetic_model_path(o, "reuse"), 2);
        EXPECT_TRUE(m.ok()) << m.status().to_string();
        return std::move(m).value();
    }();
    return lm;
}

EngineConfig config(CacheMode mode) {
    EngineConfig c;
    c.cache_mode = mode;
    c.kv_cache_mb = 16;
    c.kv_types = kernels::same_kv_types(kernels::KvDtype::kF32);  // exact math, checked to float rounding
    c.check_integrity = true;
    return c;
}

std::unique_ptr<SyncEngine> make_engine(CacheMode mode) {
    return std::make_unique<SyncEngine>(*tiny_model().model, *tiny_model().tokenizer, config(mode));
}

class Tokens {
public:
    explicit Tokens(uint64_t salt) : rng_(testing::test_seed() + salt) {}
    std::vector<int32_t> make(int32_t n) {
        std::vector<int32_t> t(n);
        const int32_t vocab = tiny_model().model->config().vocab_size;
        for (auto& x : t) x = int32_t(3 + rng_() % (vocab - 3));
        return t;
    }
    std::mt19937_64& rng() { return rng_; }

private:
    std::mt19937_64 rng_;
};

RagRequest request_of(std::vector<int32_t> preamble, std::vector<std::vector<int32_t>> docs, std::vector<int32_t> tail,
                      DocumentReuse reuse) {
    RagRequest r;
    r.segments.push_back(std::move(preamble));
    for (auto& d : docs) r.segments.push_back(std::move(d));
    r.first_segment_is_preamble = true;
    r.tail = std::move(tail);
    r.max_tokens = 6;
    r.ignore_eos = true;
    r.reuse = reuse;
    return r;
}

DocumentReuse anchored() {
    DocumentReuse r;
    r.anchored = true;
    return r;
}

void expect_pool_whole(const SyncEngine& e) {
    e.check_integrity();
    EXPECT_EQ(e.kv_cache().num_free(), e.kv_cache().pool().num_blocks()) << "blocks leaked";
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
            // The plain encoding differs (the document did not see the preamble).
            RagRequest plain = req;
            plain.reuse = {};
            auto c = seg->tail_logits(plain), b = none->tail_logits(req);
            EXPECT_GT(testing::max_relative_difference(*c, std::vector<float>(b->end() - c->size(), b->end())), 1e-3);
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

// A budget longer than every document recomputes them all with the whole prompt before them in
// view: the tail then reads exactly the KV of causal attention over the flattened prompt.
TEST(DocumentReuse, RecomputingEveryTokenIsFullAttention) {
    Tokens tok(7);
    auto none = make_engine(CacheMode::kNone);
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn}) {
        auto seg = make_engine(mode);
        std::vector<std::vector<int32_t>> docs{tok.make(17), tok.make(1), tok.make(40), tok.make(16)};
        auto req = request_of(tok.make(9), docs, tok.make(11), recompute(4096));
        for (int pass = 0; pass < 2; ++pass) {
            auto a = seg->run(req);
            ASSERT_TRUE(a.ok()) << a.status().to_string();
            EXPECT_EQ(a->stats.recomputed_tokens, 17 + 1 + 40 + 16);
            auto la = seg->tail_logits(req), lb = none->tail_logits(req);
            ASSERT_TRUE(la.ok() && lb.ok());
            testing::expect_close(*la, std::vector<float>(lb->end() - la->size(), lb->end()), 1e-4, 1.0,
                                  (std::string(cache_mode_name(mode)) + " recompute-all vs none").c_str());
            std::shuffle(req.segments.begin() + 1, req.segments.end(), tok.rng());
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
    for (const DocumentReuse& reuse : {recompute(1), recompute(16, true), recompute(20)}) {
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
            // rounds to 32; a 9-token document is recomputed whole.
            const int32_t per = reuse.recompute_tokens > 16 ? 32 : 16;
            EXPECT_EQ(ra->stats.recomputed_tokens, per + 9 + 16 + per);
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
    expect_pool_whole(*e);
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
    EXPECT_EQ(s.scheduler().kv_cache().num_free(), s.scheduler().kv_cache().pool().num_blocks());
}

}  // namespace
}  // namespace lazyattn::engine
