// The engine tests' shared model: a tiny synthetic model with quantized weights, written once per
// test binary, and an EngineConfig that checks integrity after every step.
#pragma once

#include <random>
#include <vector>

#include "engine/engine_config.h"
#include "engine/loaded_model.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::engine::testing_support {

inline LoadedModel& model() {
    static LoadedModel lm = [] {
        // Quantized weights: every row is then computed by the same integer kernels whatever the
        // batch around it, so batched, preempted and one-by-one runs give bit-identical logits
        // (OpenBLAS's fp32 GEMM picks kernels by batch size, which can flip a near-tie).
        loader::SyntheticModelOptions o;
        o.seed = 9;
        o.context_length = 2048;
        o.weight_type = loader::GgmlType::kQ8_0;
        auto m = load_model(testing::synthetic_model_path(o, "sched"), 2);
        EXPECT_TRUE(m.ok()) << m.status().to_string();
        return std::move(m).value();
    }();
    return lm;
}

inline EngineConfig config(CacheMode mode, int32_t kv_mb, int32_t max_batch_tokens = 64) {
    EngineConfig c;
    c.cache_mode = mode;
    c.kv_cache_mb = kv_mb;
    c.max_batch_tokens = max_batch_tokens;
    c.check_integrity = true;
    return c;
}

// `n` random non-special token ids.
inline std::vector<int32_t> random_tokens(std::mt19937_64& rng, int32_t n) {
    const int32_t vocab = model().model->config().vocab_size;
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(3 + rng() % (vocab - 3));
    return t;
}

}  // namespace lazyattn::engine::testing_support
