// The central invariants of LazyAttention on a tiny random model (fresh random documents each
// run): lazy, lazy-k and block-attn compute the same function; with at most one segment that is
// ordinary attention; cached documents are shared with zero copies wherever they sit; nothing
// leaks.
#include <algorithm>
#include <map>
#include <numeric>

#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::engine {
namespace {

LoadedModel& tiny_model(int32_t context_length = 4096) {
    static std::map<int32_t, LoadedModel> models;
    auto it = models.find(context_length);
    if (it == models.end()) {
        synthetic::SyntheticModelOptions o;
        o.seed = 5;
        o.context_length = context_length;
        const std::string path = testing::synthetic_model_path(o, "equiv-" + std::to_string(context_length));
        auto lm = load_model(path, 2);
        EXPECT_TRUE(lm.ok()) << lm.status().to_string();
        it = models.emplace(context_length, std::move(lm).value()).first;
    }
    return it->second;
}

// fp32 KV unless told otherwise: the equivalences below are exact math, checked to float rounding.
std::unique_ptr<SyncEngine> make_engine(CacheMode mode, int32_t kv_mb = 16, int32_t ctx = 4096,
                                        kernels::KvDtype kv_dtype = kernels::KvDtype::kF32) {
    auto& lm = tiny_model(ctx);
    EngineConfig c;
    c.cache_mode = mode;
    c.kv_cache_mb = kv_mb;
    c.kv_types = kernels::same_kv_types(kv_dtype);
    c.check_integrity = true;
    return std::make_unique<SyncEngine>(*lm.model, *lm.tokenizer, c);
}

class Documents {
public:
    explicit Documents(uint64_t salt) : rng_(testing::test_seed() + salt) {}
    std::vector<int32_t> make(int32_t n) {
        std::vector<int32_t> t(n);
        const int32_t vocab = tiny_model().model->config().vocab_size;
        for (auto& x : t) x = int32_t(3 + rng_() % (vocab - 3));  // no special tokens
        return t;
    }
    std::mt19937_64& rng() { return rng_; }

private:
    std::mt19937_64 rng_;
};

RagRequest request_of(std::vector<std::vector<int32_t>> segments, std::vector<int32_t> tail, int32_t max_tokens = 8) {
    RagRequest r;
    r.segments = std::move(segments);
    r.tail = std::move(tail);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

void expect_pool_whole(const SyncEngine& e) {
    e.check_integrity();
    EXPECT_EQ(e.kv_cache().num_free(), e.kv_cache().pool().num_blocks()) << "blocks leaked";
}

// Segment layouts the invariants are checked on: lengths 1, B-1, B, B+1, 3B+5; 0, 1, 2, 40
// segments; a document twice in one request.
std::vector<std::vector<std::vector<int32_t>>> layouts(Documents& docs) {
    std::vector<std::vector<std::vector<int32_t>>> out;
    out.push_back({});
    out.push_back({docs.make(1)});
    out.push_back({docs.make(15), docs.make(16)});
    out.push_back({docs.make(17), docs.make(53), docs.make(1), docs.make(16)});
    auto twice = docs.make(20);
    out.push_back({twice, docs.make(9), twice});
    std::vector<std::vector<int32_t>> forty;
    for (int i = 0; i < 40; ++i) forty.push_back(docs.make(1 + int32_t(docs.rng()() % 40)));
    out.push_back(forty);
    return out;
}

TEST(LazyEquivalence, LazyLazyKAndBlockAttnGiveTheSameLogitsAndTokens) {
    Documents docs(1);
    auto lazy = make_engine(CacheMode::kLazy), lazy_k = make_engine(CacheMode::kLazyK),
         block = make_engine(CacheMode::kBlockAttn);
    for (const auto& segments : layouts(docs)) {
        auto req = request_of(segments, docs.make(19));
        // Twice each: the first run computes the segments, the second reads them from cache.
        for (int pass = 0; pass < 2; ++pass) {
            auto a = lazy->tail_logits(req), b = lazy_k->tail_logits(req), c = block->tail_logits(req);
            ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().to_string() << b.status().to_string();
            testing::expect_close(*b, *a, 1e-4, 1.0, "lazy-k vs lazy");
            testing::expect_close(*c, *a, 1e-4, 1.0, "block-attn vs lazy");
            auto ra = lazy->run(req), rb = lazy_k->run(req), rc = block->run(req);
            ASSERT_TRUE(ra.ok() && rb.ok() && rc.ok());
            EXPECT_EQ(ra->token_ids, rb->token_ids);
            EXPECT_EQ(ra->token_ids, rc->token_ids);
        }
        std::shuffle(req.segments.begin(), req.segments.end(), docs.rng());
        auto a = lazy->tail_logits(req), c = block->tail_logits(req);
        testing::expect_close(*c, *a, 1e-4, 1.0, "shuffled block-attn vs lazy");
    }
    expect_pool_whole(*lazy);
    expect_pool_whole(*lazy_k);
    expect_pool_whole(*block);
}

// With a 16-bit KV pool every stored key and value is rounded once (block-attn's re-rotated copies
// twice). Both variants stay within a few roundings of the format of the fp32-KV result (element-wise
// differences seen: f16 ~1e-3, bf16 ~1e-2, i.e. 2^-11 and 2^-8 amplified by the layers).
TEST(LazyEquivalence, SixteenBitKvStaysWithinItsRounding) {
    for (const auto& [dtype, bound] :
         {std::pair{kernels::KvDtype::kF16, 4e-3}, std::pair{kernels::KvDtype::kBF16, 3e-2}}) {
        Documents docs(11);
        auto exact = make_engine(CacheMode::kLazy);
        auto lazy = make_engine(CacheMode::kLazy, 16, 4096, dtype),
             block = make_engine(CacheMode::kBlockAttn, 16, 4096, dtype);
        double worst_lazy = 0, worst_block = 0;
        for (const auto& segments : layouts(docs)) {
            auto req = request_of(segments, docs.make(19));
            auto want = exact->tail_logits(req), a = lazy->tail_logits(req), c = block->tail_logits(req);
            ASSERT_TRUE(want.ok() && a.ok() && c.ok());
            worst_lazy = std::max(worst_lazy, testing::max_relative_difference(*a, *want));
            worst_block = std::max(worst_block, testing::max_relative_difference(*c, *want));
            testing::expect_close(*a, *want, bound, 1.0, "16-bit lazy vs fp32");
            testing::expect_close(*c, *want, bound, 1.0, "16-bit block-attn vs fp32");
        }
        std::printf("[kv dtype] %s: worst relative logit difference to fp32 KV: lazy %.2e, block-attn %.2e\n",
                    kernels::kv_dtype_name(dtype), worst_lazy, worst_block);
        expect_pool_whole(*lazy);
        expect_pool_whole(*block);
    }
}

TEST(LazyEquivalence, OneSegmentBlockAttnEqualsFullAttention) {
    Documents docs(2);
    auto block = make_engine(CacheMode::kBlockAttn), none = make_engine(CacheMode::kNone),
         prefix = make_engine(CacheMode::kPrefix);
    for (int32_t len : {1, 15, 16, 17, 53}) {
        auto req = request_of({docs.make(len)}, docs.make(7));
        auto a = block->tail_logits(req), b = none->tail_logits(req);
        ASSERT_TRUE(a.ok() && b.ok());
        // none returns logits for the flattened prompt: compare its tail rows.
        const size_t vocab = size_t(tiny_model().model->config().vocab_size);
        std::vector<float> none_tail(b->end() - a->size(), b->end());
        testing::expect_close(*a, none_tail, 1e-4, 1.0, "block-attn vs none");
        auto p = prefix->tail_logits(req);
        testing::expect_close(std::vector<float>(p->end() - a->size(), p->end()), none_tail, 1e-4, 1.0,
                              "prefix vs none");
        EXPECT_EQ(a->size(), 7 * vocab);
    }
}

// Admits requests and runs their prompts (nothing generated yet: they stay live).
std::vector<std::shared_ptr<RequestHandle>> start(SyncEngine& e, const std::vector<RagRequest>& reqs) {
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (auto r : reqs) {
        r.max_tokens = 2;
        handles.push_back(*e.core().add(r));
    }
    for (int i = 0; i < 64; ++i) {
        bool all_prefilled = true;
        for (auto& h : handles) {
            const SequenceState* s = e.scheduler().find(h->id());
            all_prefilled &= s != nullptr && s->admitted && s->prompt_done();
        }
        if (all_prefilled) break;
        e.core().step();
    }
    return handles;
}

void drain(SyncEngine& e) {
    while (e.core().step()) {
    }
}

TEST(LazyEquivalence, CachedDocumentsAreSharedWithZeroCopies) {
    Documents docs(3);
    auto shared = docs.make(40);
    auto lazy = make_engine(CacheMode::kLazy);
    auto r1 = request_of({docs.make(10), shared}, docs.make(5));
    auto r2 = request_of({shared, docs.make(33), docs.make(3)}, docs.make(6));
    auto live = start(*lazy, {r1, r2});
    const SequenceState* a1 = lazy->scheduler().find(live[0]->id());
    const SequenceState* a2 = lazy->scheduler().find(live[1]->id());
    ASSERT_TRUE(a1 && a2);
    // Both live requests read the same physical blocks for the shared document, which was
    // computed once (one job) although both needed it.
    EXPECT_EQ(a1->kv.segments[1].blocks, a2->kv.segments[0].blocks);
    EXPECT_EQ(lazy->scheduler().stats().segment_jobs, 4);  // 10, 40, 33 and 3 tokens
    EXPECT_EQ(a2->stats.segments_hit, 1);
    EXPECT_EQ(a2->stats.segments_missed, 2);
    drain(*lazy);

    // A cached document costs a lazy request no block at all: only the tail allocates.
    auto r3 = request_of({shared}, docs.make(16));
    auto live3 = start(*lazy, {r3});
    const SequenceState* a3 = lazy->scheduler().find(live3[0]->id());
    ASSERT_TRUE(a3);
    EXPECT_EQ(a3->stats.segments_hit, 1);
    EXPECT_EQ(a3->stats.prefill_tokens, 16);
    EXPECT_EQ(a3->stats.reused_tokens, 40);
    EXPECT_EQ(lazy->kv_cache().num_used(), 3 /* shared doc */ + 1 /* tail: 16 prompt tokens */);
    drain(*lazy);

    // block-attn makes private copies of the same document.
    auto block = make_engine(CacheMode::kBlockAttn);
    ASSERT_TRUE(block->run(r3).ok());
    auto live4 = start(*block, {r3});
    const SequenceState* b3 = block->scheduler().find(live4[0]->id());
    ASSERT_TRUE(b3);
    EXPECT_EQ(b3->stats.segments_hit, 1);
    EXPECT_TRUE(b3->kv.segments[0].private_copy);
    EXPECT_EQ(block->kv_cache().num_used(), 3 /* private copy */ + 1 /* tail */);
    drain(*block);
    expect_pool_whole(*lazy);
    expect_pool_whole(*block);
}

TEST(LazyEquivalence, ReorderingDocumentsPrefillsNoDocumentTokenInLazy) {
    Documents docs(4);
    std::vector<std::vector<int32_t>> segs{docs.make(30), docs.make(17), docs.make(64), docs.make(5)};
    const auto tail = docs.make(12);
    auto lazy = make_engine(CacheMode::kLazy), prefix = make_engine(CacheMode::kPrefix);
    ASSERT_TRUE(lazy->run(request_of(segs, tail)).ok());
    ASSERT_TRUE(prefix->run(request_of(segs, tail)).ok());
    auto reordered = segs;
    std::swap(reordered[0], reordered[2]);  // first difference at token 0
    auto rl = lazy->run(request_of(reordered, tail));
    ASSERT_TRUE(rl.ok());
    EXPECT_EQ(rl->stats.segments_hit, 4);
    EXPECT_EQ(rl->stats.prefill_tokens, 12);  // the tail only
    EXPECT_EQ(rl->stats.reused_tokens, 30 + 17 + 64 + 5);
    auto rp = prefix->run(request_of(reordered, tail));
    ASSERT_TRUE(rp.ok());
    EXPECT_EQ(rp->stats.prefill_tokens, 30 + 17 + 64 + 5 + 12);
    // Swapping the last two documents keeps the first 47 tokens: prefix shares 2 whole blocks
    // and copies the 15 rows the third block starts with.
    auto late = segs;
    std::swap(late[2], late[3]);
    auto rp2 = prefix->run(request_of(late, tail));
    EXPECT_EQ(rp2->stats.reused_tokens, 47);
    expect_pool_whole(*lazy);
    expect_pool_whole(*prefix);
}

TEST(LazyEquivalence, HashesFollowContentNotPlacement) {
    Documents docs(5);
    auto lazy = make_engine(CacheMode::kLazy);
    auto doc = docs.make(21);
    ASSERT_TRUE(lazy->run(request_of({docs.make(4), doc}, docs.make(3))).ok());
    auto changed = doc;
    changed[20] = changed[20] == 10 ? 11 : 10;
    auto miss = lazy->run(request_of({changed}, docs.make(3)));
    EXPECT_EQ(miss->stats.segments_missed, 1);
    // The unchanged first block (16 tokens) is still reused; the partial last block is not.
    EXPECT_EQ(miss->stats.prefill_tokens, 5 + 3);
    auto hit = lazy->run(request_of({docs.make(8), docs.make(2), doc}, docs.make(3)));
    EXPECT_EQ(hit->stats.segments_hit, 1);
    EXPECT_EQ(hit->stats.segments_missed, 2);
    // [8 tokens] and [4, 4] are different segment lists: the tail cache must not confuse them.
    auto eight = docs.make(8);
    auto t = docs.make(40);
    auto one = lazy->tail_logits(request_of({eight}, t));
    auto two = lazy->tail_logits(request_of({{eight.begin(), eight.begin() + 4}, {eight.begin() + 4, eight.end()}}, t));
    auto two_ref =
        make_engine(CacheMode::kBlockAttn)
            ->tail_logits(request_of({{eight.begin(), eight.begin() + 4}, {eight.begin() + 4, eight.end()}}, t));
    testing::expect_close(*two, *two_ref, 1e-4, 1.0, "[4,4] after [8]");
    EXPECT_NE(*one, *two);
    expect_pool_whole(*lazy);
}

TEST(LazyEquivalence, PositionsBeyondSixteenBitsAndTheContextLimit) {
    // 70 documents of 1000 tokens: the tail sits past logical position 65536.
    Documents docs(6);
    const int32_t ctx = 80000;
    std::vector<std::vector<int32_t>> segs;
    for (int i = 0; i < 70; ++i) segs.push_back(docs.make(1000));
    auto req = request_of(segs, docs.make(5));
    auto lazy = make_engine(CacheMode::kLazy, 64, ctx), block = make_engine(CacheMode::kBlockAttn, 128, ctx);
    auto a = lazy->tail_logits(req), b = block->tail_logits(req);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    testing::expect_close(*b, *a, 1e-4, 1.0, "tail at position 70000");
    segs.push_back(docs.make(10000));
    auto too_long = lazy->run(request_of(segs, docs.make(5)));
    ASSERT_FALSE(too_long.ok());
    EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(too_long.status().message().find("context length 80000"), std::string::npos);
    expect_pool_whole(*lazy);
}

TEST(LazyEquivalence, OutOfBlocksIsAnErrorAndLeavesThePoolWhole) {
    Documents docs(7);
    auto lazy = make_engine(CacheMode::kLazy, 1);  // 128 blocks of 16 tokens
    auto r = lazy->run(request_of({docs.make(1500), docs.make(1000)}, docs.make(5)));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(r.status().message().find("whole pool has 128"), std::string::npos) << r.status().message();
    expect_pool_whole(*lazy);
    EXPECT_TRUE(lazy->run(request_of({docs.make(100)}, docs.make(5))).ok());
    expect_pool_whole(*lazy);
}

namespace quantized {

// A tiny model with head_dim 32: q8_0 and q4_0 keep 32 values per scale along the head dimension.
LoadedModel& model_for_quantized_kv() {
    static LoadedModel lm = [] {
        synthetic::SyntheticModelOptions o;
        o.seed = 7;
        o.head_dim = 32;
        o.context_length = 4096;
        auto loaded = load_model(testing::synthetic_model_path(o, "equiv-hd32"), 2);
        EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
        return std::move(loaded).value();
    }();
    return lm;
}

std::unique_ptr<SyncEngine> engine_of(LoadedModel& lm, CacheMode mode, kernels::KvDtype dtype) {
    EngineConfig c;
    c.cache_mode = mode;
    c.kv_cache_mb = 16;
    c.kv_types = kernels::same_kv_types(dtype);
    c.check_integrity = true;
    return std::make_unique<SyncEngine>(*lm.model, *lm.tokenizer, c);
}

// Quantized KV: lazy stores keys rotated from position 0 and quantizes them once; lazy-k
// quantizes raw keys and rotates them as read; block-attn dequantizes, re-rotates and quantizes
// its copies again. The three are then no longer the same function bit for bit (they quantize
// different vectors), so each is held to the fp32-KV result within its format's noise instead:
// the largest logit difference relative to the logits' scale (seen on this model: q8_0 ~5e-3,
// q4_0 ~9e-2; the bounds leave 4x and 3x for other random documents).
TEST(LazyEquivalence, QuantizedKvStaysWithinItsQuantization) {
    LoadedModel& lm = model_for_quantized_kv();
    for (const auto& [dtype, bound] :
         {std::pair{kernels::KvDtype::kQ8_0, 2e-2}, std::pair{kernels::KvDtype::kQ4_0, 3e-1}}) {
        Documents docs(13);
        auto exact = engine_of(lm, CacheMode::kLazy, kernels::KvDtype::kF32);
        std::vector<std::pair<const char*, std::unique_ptr<SyncEngine>>> variants;
        variants.emplace_back("lazy", engine_of(lm, CacheMode::kLazy, dtype));
        variants.emplace_back("lazy-k", engine_of(lm, CacheMode::kLazyK, dtype));
        variants.emplace_back("block-attn", engine_of(lm, CacheMode::kBlockAttn, dtype));
        double worst[3] = {0, 0, 0};
        for (const auto& segments : layouts(docs)) {
            auto req = request_of(segments, docs.make(19));
            auto want = exact->tail_logits(req);
            ASSERT_TRUE(want.ok()) << want.status().to_string();
            for (size_t i = 0; i < variants.size(); ++i) {
                for (int pass = 0; pass < 2; ++pass) {  // computed, then read from the cache
                    auto got = variants[i].second->tail_logits(req);
                    ASSERT_TRUE(got.ok()) << got.status().to_string();
                    const double diff = testing::max_relative_difference(*got, *want);
                    worst[i] = std::max(worst[i], diff);
                    EXPECT_LE(diff, bound) << variants[i].first << " pass " << pass;
                }
            }
        }
        std::printf(
            "[kv dtype] %s: worst relative logit difference to fp32 KV: lazy %.2e, lazy-k %.2e, "
            "block-attn %.2e\n",
            kernels::kv_dtype_name(dtype), worst[0], worst[1], worst[2]);
        for (auto& [name, e] : variants) expect_pool_whole(*e);
    }
}

// A model whose head_dim is not a multiple of 32 cannot hold q8_0 rows: every request is refused
// with the reason, nothing is computed on a misread pool.
TEST(LazyEquivalence, QuantizedKvIsRefusedWhereTheHeadDimDoesNotSplitIntoGroups) {
    auto e = engine_of(tiny_model(), CacheMode::kLazy, kernels::KvDtype::kQ8_0);  // head_dim 16
    Documents docs(17);
    auto r = e->run(request_of({docs.make(5)}, docs.make(4)));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("groups of 32"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("head_dim 16"), std::string::npos) << r.status().message();
}

}  // namespace quantized

}  // namespace
}  // namespace lazyattn::engine
