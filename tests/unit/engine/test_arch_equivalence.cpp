// LazyAttention's central invariant on every architecture: lazy, lazy-k and block-attn compute
// the same function on reordered cached documents, and with one document they equal ordinary
// attention (none, prefix). Gemma 3 runs with an 8-token window on two of its three layers and
// documents several windows long, so cached documents fall partly and wholly outside the window
// of later queries (docs/design.md, "Sliding windows").
#include <algorithm>
#include <map>

#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::engine {
namespace {

synthetic::SyntheticModelOptions options_of(const std::string& tag) {
    synthetic::SyntheticModelOptions o;
    o.seed = 31;
    o.num_layers = 3;
    o.context_length = 1024;
    if (tag == "llama3") {
        o.llama3_rope_freqs = true;
        o.rope_freq_base = 500000.0f;
    } else {
        o.arch = tag;
    }
    if (tag == "qwen3" || tag == "gemma3") o.head_dim = 32;
    if (tag == "gemma3") {
        o.sliding_window = 8;
        o.sliding_window_pattern = 2;
        o.rope_freq_base = 1000000.0f;
    }
    if (tag == "phi3" || tag == "phi3-partial") {
        o.arch = "phi3";
        o.phi3_rope_factors = true;
    }
    if (tag == "phi3-partial") o.rope_dims = 12;  // the attention factor on 3/4 of each head
    return o;
}

LoadedModel& model_of(const std::string& tag) {
    static std::map<std::string, LoadedModel> models;
    auto it = models.find(tag);
    if (it == models.end()) {
        auto lm = load_model(testing::synthetic_model_path(options_of(tag), "arch-equiv-" + tag), 2);
        EXPECT_TRUE(lm.ok()) << lm.status().to_string();
        it = models.emplace(tag, std::move(lm).value()).first;
    }
    return it->second;
}

std::unique_ptr<SyncEngine> make_engine(const std::string& tag, CacheMode mode) {
    auto& lm = model_of(tag);
    EngineConfig c;
    c.cache_mode = mode;
    c.kv_cache_mb = 8;
    c.kv_types = kernels::same_kv_types(kernels::KvDtype::kF32);
    c.check_integrity = true;
    return std::make_unique<SyncEngine>(*lm.model, *lm.tokenizer, c);
}

RagRequest request_of(std::vector<std::vector<int32_t>> segments, std::vector<int32_t> tail) {
    RagRequest r;
    r.segments = std::move(segments);
    r.tail = std::move(tail);
    r.max_tokens = 6;
    r.ignore_eos = true;
    return r;
}

class Tokens {
public:
    Tokens(uint64_t salt, int32_t vocab) : rng_(testing::test_seed() + salt), vocab_(vocab) {}
    std::vector<int32_t> make(int32_t n) {
        std::vector<int32_t> t(n);
        for (auto& x : t) x = int32_t(3 + rng_() % (vocab_ - 3));  // no special tokens
        return t;
    }
    std::mt19937_64& rng() { return rng_; }

private:
    std::mt19937_64 rng_;
    int32_t vocab_;
};

const char* const kArchitectures[] = {"llama3", "qwen3", "gemma3", "phi3", "phi3-partial"};

void expect_pool_whole(const SyncEngine& e) {
    e.check_integrity();
    EXPECT_EQ(e.kv_cache().num_free(), e.kv_cache().pool().num_blocks()) << "blocks leaked";
}

TEST(ArchEquivalence, LazyLazyKAndBlockAttnAgreeOnEveryArchitecture) {
    for (const std::string arch : kArchitectures) {
        SCOPED_TRACE(arch);
        Tokens tok(41, model_of(arch).model->config().vocab_size);
        auto lazy = make_engine(arch, CacheMode::kLazy), lazy_k = make_engine(arch, CacheMode::kLazyK),
             block = make_engine(arch, CacheMode::kBlockAttn);
        const std::vector<std::vector<std::vector<int32_t>>> layouts = {
            {tok.make(1)},
            {tok.make(15), tok.make(16)},
            {tok.make(40), tok.make(7), tok.make(57)},  // documents several 8-token windows long
            {tok.make(17), tok.make(53), tok.make(1), tok.make(16), tok.make(3)},
        };
        for (auto segments : layouts) {
            auto req = request_of(segments, tok.make(19));
            for (int pass = 0; pass < 2; ++pass) {  // computed, then read from the cache
                auto a = lazy->tail_logits(req), b = lazy_k->tail_logits(req), c = block->tail_logits(req);
                ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().to_string() << b.status().to_string();
                testing::expect_close(*b, *a, 1e-4, 1.0, "lazy-k vs lazy");
                testing::expect_close(*c, *a, 1e-4, 1.0, "block-attn vs lazy");
                auto ra = lazy->run(req), rb = lazy_k->run(req), rc = block->run(req);
                ASSERT_TRUE(ra.ok() && rb.ok() && rc.ok());
                EXPECT_EQ(ra->token_ids, rb->token_ids);
                EXPECT_EQ(ra->token_ids, rc->token_ids);
            }
            std::shuffle(req.segments.begin(), req.segments.end(), tok.rng());  // cached, new places
            auto a = lazy->tail_logits(req), b = lazy_k->tail_logits(req), c = block->tail_logits(req);
            ASSERT_TRUE(a.ok() && b.ok() && c.ok());
            testing::expect_close(*b, *a, 1e-4, 1.0, "reordered lazy-k vs lazy");
            testing::expect_close(*c, *a, 1e-4, 1.0, "reordered block-attn vs lazy");
        }
        expect_pool_whole(*lazy);
        expect_pool_whole(*lazy_k);
        expect_pool_whole(*block);
    }
}

TEST(ArchEquivalence, OneDocumentEqualsFullAttention) {
    for (const std::string arch : kArchitectures) {
        SCOPED_TRACE(arch);
        Tokens tok(42, model_of(arch).model->config().vocab_size);
        auto lazy = make_engine(arch, CacheMode::kLazy), none = make_engine(arch, CacheMode::kNone),
             prefix = make_engine(arch, CacheMode::kPrefix);
        for (int32_t len : {1, 17, 53}) {
            auto req = request_of({tok.make(len)}, tok.make(11));
            auto a = lazy->tail_logits(req), b = none->tail_logits(req), p = prefix->tail_logits(req);
            ASSERT_TRUE(a.ok() && b.ok() && p.ok());
            // none and prefix return logits for the flattened prompt: compare their tail rows.
            const std::vector<float> none_tail(b->end() - a->size(), b->end());
            testing::expect_close(*a, none_tail, 1e-4, 1.0, "lazy vs none");
            testing::expect_close(std::vector<float>(p->end() - a->size(), p->end()), none_tail, 1e-4, 1.0,
                                  "prefix vs none");
        }
        expect_pool_whole(*lazy);
    }
}

// Under a window the tail's local layers no longer see a document far behind it, but the global
// layer does: replacing that document changes the answer (it is not simply dropped). Documents
// cached at other places read back exactly what computing them fresh in this order gives.
TEST(ArchEquivalence, GemmaDocumentsOutsideTheWindowStillReachTheGlobalLayer) {
    Tokens tok(43, model_of("gemma3").model->config().vocab_size);
    auto lazy = make_engine("gemma3", CacheMode::kLazy), fresh = make_engine("gemma3", CacheMode::kLazy);
    const auto far = tok.make(30), near = tok.make(30), other = tok.make(30), tail = tok.make(5);
    ASSERT_TRUE(lazy->tail_logits(request_of({near, far}, tail)).ok());  // caches both, other order
    auto with_far = lazy->tail_logits(request_of({far, near}, tail));
    auto with_other = lazy->tail_logits(request_of({other, near}, tail));
    ASSERT_TRUE(with_far.ok() && with_other.ok());
    EXPECT_GT(testing::max_relative_difference(*with_far, *with_other), 1e-3) << "the far document must matter";
    auto fresh_far = fresh->tail_logits(request_of({far, near}, tail));
    ASSERT_TRUE(fresh_far.ok());
    testing::expect_close(*with_far, *fresh_far, 1e-4, 1.0, "cached and moved vs computed in place");
    expect_pool_whole(*lazy);
}

}  // namespace
}  // namespace lazyattn::engine
