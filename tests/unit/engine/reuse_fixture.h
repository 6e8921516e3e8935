// What the document-reuse tests share: the tiny random model they run on, an exact (f32 KV)
// engine per cache mode with the integrity check after every step, a request of
// [preamble][documents][question], and the check that a test left every block free.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::engine::reuse_testing {

inline LoadedModel& tiny_model() {
    static LoadedModel lm = [] {
        synthetic::SyntheticModelOptions o;
        o.seed = 9;
        auto m = load_model(testing::synthetic_model_path(o, "reuse"), 2);
        EXPECT_TRUE(m.ok()) << m.status().to_string();
        return std::move(m).value();
    }();
    return lm;
}

inline EngineConfig config(CacheMode mode) {
    EngineConfig c;
    c.cache_mode = mode;
    c.kv_cache_mb = 16;
    c.kv_types = kernels::same_kv_types(kernels::KvDtype::kF32);  // exact math, checked to float rounding
    c.check_integrity = true;
    return c;
}

inline std::unique_ptr<SyncEngine> make_engine(CacheMode mode) {
    return std::make_unique<SyncEngine>(*tiny_model().model, *tiny_model().tokenizer, config(mode));
}

inline RagRequest request_of(std::vector<int32_t> preamble, std::vector<std::vector<int32_t>> docs,
                             std::vector<int32_t> tail, DocumentReuse reuse) {
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

inline void expect_pool_whole(const SyncEngine& e) {
    e.check_integrity();
    EXPECT_EQ(e.kv_cache().num_free(), e.kv_cache().pool().num_blocks()) << "blocks leaked";
}

// Fresh random prompt tokens (above the first three ids) from the test seed and a salt.
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

}  // namespace lazyattn::engine::reuse_testing
