// The store's model fingerprint tells apart any two models that compute different KV: a config
// differing in any one field (a float by one ulp, one RoPE factor, the sliding pattern with the
// same number of sliding layers) has another fingerprint, and over real GGUF files an entry one
// model stored is a miss, not a hit, for a copy differing only in rope freq_base by 0.4 (which
// ModelConfig::describe(), once the fingerprint's input, prints the same).
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <set>

#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "scheduler_fixture.h"
#include "store/model_fingerprint.h"
#include "store_test_util.h"

namespace lazyattn::store {
namespace {

using model::ModelConfig;
using model::RopeConfig;

float next_up(float v) { return std::nextafter(v, std::numeric_limits<float>::infinity()); }

// A config with every field set, vectors non-empty, so each mutation below changes something.
ModelConfig base_config() {
    ModelConfig c;
    c.arch = model::Architecture::kGemma3;
    c.arch_name = "gemma3";
    c.name = "base";
    c.num_layers = 6;
    c.hidden_dim = 64;
    c.ffn_dim = 128;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.head_dim = 16;
    c.vocab_size = 300;
    c.context_length = 512;
    c.norm_eps = 1e-6f;
    c.rope = {100000.0f, 16, model::RopePairing::kNeox, {1.0f, 2.0f, 4.0f, 8.0f, 1.0f, 1.0f, 1.0f, 1.0f}, 2.0f, 1.1f};
    c.sliding_window = 128;
    c.layer_sliding = {1, 1, 0, 1, 1, 0};
    c.rope_local = {10000.0f, 16,  model::RopePairing::kNeox, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f},
                    1.0f,     1.0f};
    c.attention_scale = 0.25f;
    c.embedding_scale = 8.0f;
    c.final_logit_softcap = 30.0f;
    return c;
}

struct ConfigMutation {
    const char* field;
    void (*mutate)(ModelConfig&);
};
struct RopeMutation {
    const char* field;
    void (*mutate)(RopeConfig&);
};

// One entry per field of ModelConfig but its two RopeConfigs (mutated field by field below).
constexpr ConfigMutation kConfigMutations[] = {
    {"arch", [](ModelConfig& c) { c.arch = model::Architecture::kQwen3; }},
    {"arch_name", [](ModelConfig& c) { c.arch_name = "gemma3x"; }},
    {"name", [](ModelConfig& c) { c.name = "other"; }},
    {"num_layers", [](ModelConfig& c) { ++c.num_layers; }},
    {"hidden_dim", [](ModelConfig& c) { ++c.hidden_dim; }},
    {"ffn_dim", [](ModelConfig& c) { ++c.ffn_dim; }},
    {"num_heads", [](ModelConfig& c) { ++c.num_heads; }},
    {"num_kv_heads", [](ModelConfig& c) { ++c.num_kv_heads; }},
    {"head_dim", [](ModelConfig& c) { ++c.head_dim; }},
    {"vocab_size", [](ModelConfig& c) { ++c.vocab_size; }},
    {"context_length", [](ModelConfig& c) { ++c.context_length; }},
    {"norm_eps", [](ModelConfig& c) { c.norm_eps = next_up(c.norm_eps); }},
    {"qkv_bias", [](ModelConfig& c) { c.qkv_bias = !c.qkv_bias; }},
    {"tied_embeddings", [](ModelConfig& c) { c.tied_embeddings = !c.tied_embeddings; }},
    {"fused_qkv", [](ModelConfig& c) { c.fused_qkv = !c.fused_qkv; }},
    {"sliding_window", [](ModelConfig& c) { ++c.sliding_window; }},
    // The same number of sliding layers, in another pattern.
    {"layer_sliding", [](ModelConfig& c) { std::swap(c.layer_sliding[1], c.layer_sliding[2]); }},
    {"attention_scale", [](ModelConfig& c) { c.attention_scale = next_up(c.attention_scale); }},
    {"embedding_scale", [](ModelConfig& c) { c.embedding_scale = next_up(c.embedding_scale); }},
    {"final_logit_softcap", [](ModelConfig& c) { c.final_logit_softcap = next_up(c.final_logit_softcap); }},
};
constexpr RopeMutation kRopeMutations[] = {
    {"freq_base", [](RopeConfig& r) { r.freq_base = next_up(r.freq_base); }},
    {"num_rotary_dims", [](RopeConfig& r) { r.num_rotary_dims -= 2; }},
    {"pairing", [](RopeConfig& r) { r.pairing = model::RopePairing::kInterleaved; }},
    {"freq_factors", [](RopeConfig& r) { r.freq_factors[5] = next_up(r.freq_factors[5]); }},
    {"linear_scale", [](RopeConfig& r) { r.linear_scale = next_up(r.linear_scale); }},
    {"attn_factor", [](RopeConfig& r) { r.attn_factor = next_up(r.attn_factor); }},
};
// A field added to either struct fails these until it has a mutation above (and is hashed: the
// same counts are asserted beside the hash in src/store/model_fingerprint.cpp).
static_assert(std::size(kConfigMutations) + 2 == detail::field_count<ModelConfig>(),
              "a ModelConfig field has no mutation here");
static_assert(std::size(kRopeMutations) == detail::field_count<RopeConfig>(),
              "a RopeConfig field has no mutation here");

TEST(ModelFingerprint, EveryFieldOfTheConfigChangesIt) {
    const ModelConfig base = base_config();
    EXPECT_EQ(config_fingerprint(base), config_fingerprint(base_config()));  // deterministic
    std::vector<std::pair<std::string, ModelConfig>> variants;
    for (const ConfigMutation& m : kConfigMutations) {
        ModelConfig c = base;
        m.mutate(c);
        variants.push_back({m.field, c});
    }
    for (const RopeMutation& m : kRopeMutations) {
        ModelConfig global = base, local = base;
        m.mutate(global.rope);
        m.mutate(local.rope_local);
        variants.push_back({std::string("rope.") + m.field, global});
        variants.push_back({std::string("rope_local.") + m.field, local});
    }
    // Two more the text description rounded or summarised away.
    ModelConfig rope_base = base;
    rope_base.rope.freq_base = 100000.4f;
    EXPECT_EQ(rope_base.describe(), base.describe());
    variants.push_back({"rope.freq_base + 0.4", rope_base});
    ModelConfig more_factors = base;
    more_factors.rope.freq_factors.push_back(1.0f);
    variants.push_back({"rope.freq_factors longer", more_factors});

    std::set<std::pair<uint64_t, uint64_t>> seen = {{config_fingerprint(base).low, config_fingerprint(base).high}};
    for (const auto& [field, c] : variants) {
        const Fingerprint f = config_fingerprint(c);
        EXPECT_TRUE(seen.insert({f.low, f.high}).second) << field << " left the fingerprint as another config's";
    }
}

// Two GGUF files alike but for rope.freq_base, 100000 and 100000.4 (the same weights, the same
// description): model B never reads the entries model A stored, while A reads them back.
TEST(ModelFingerprint, AnEntryStoredByOneModelIsAMissForOneDifferingOnlyInRopeBase) {
    synthetic::SyntheticModelOptions oa;
    oa.seed = 21;
    oa.context_length = 512;
    oa.rope_freq_base = 100000.0f;
    synthetic::SyntheticModelOptions ob = oa;
    ob.rope_freq_base = 100000.4f;
    auto a = engine::load_model(lazyattn::testing::synthetic_model_path(oa, "fingerprint-rope-a"), 1);
    auto b = engine::load_model(lazyattn::testing::synthetic_model_path(ob, "fingerprint-rope-b"), 1);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string() << b.status().to_string();
    ASSERT_NE(a->model->config().rope.freq_base, b->model->config().rope.freq_base);
    EXPECT_EQ(a->model->config().describe(), b->model->config().describe());  // what v2 hashed
    EXPECT_NE(model_fingerprint(*a->model), model_fingerprint(*b->model));

    testing::TempDir dir;
    engine::EngineConfig c = engine::testing_support::config(engine::CacheMode::kLazy, 4);
    c.kv_stores = {dir.path};
    std::mt19937_64 rng(lazyattn::testing::test_seed() + 77);
    engine::RagRequest r;
    for (int32_t n : {40, 16, 33}) r.segments.push_back(engine::testing_support::random_tokens(rng, n));
    r.tail = engine::testing_support::random_tokens(rng, 5);
    r.max_tokens = 4;
    r.ignore_eos = true;
    auto serve = [&](engine::LoadedModel& m) {
        engine::SyncEngine e(*m.model, *m.tokenizer, c);
        EXPECT_TRUE(e.status().ok()) << e.status().to_string();
        EXPECT_TRUE(e.run(r).ok());
        e.core().kv_store().store()->flush();
        return e.scheduler().stats();
    };
    const engine::SchedulerStats by_a = serve(*a);
    EXPECT_EQ(by_a.store.tiers[0].writes, 3);
    const engine::SchedulerStats by_b = serve(*b);
    EXPECT_EQ(by_b.segment_store_hits, 0) << "model B read model A's KV";
    EXPECT_EQ(by_b.store.tiers[0].rejected, 0);  // a miss: another key, not a foreign entry found
    EXPECT_EQ(by_b.segment_job_tokens, 40 + 16 + 33);
    const engine::SchedulerStats again_a = serve(*a);
    EXPECT_EQ(again_a.segment_store_hits, 3);  // A's entries are there, and are A's
}

}  // namespace
}  // namespace lazyattn::store
