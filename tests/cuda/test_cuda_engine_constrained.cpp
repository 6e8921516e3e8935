// Structured output where the logits live: the engine on the CUDA backend (in the emulator here,
// on a GPU in test_cuda_engine) samples a constrained row on the device, the runner handing the
// grammar's bitmask (computed on its helper thread during the forward) in the row's SampleRow and
// the backend masking the row before its sampler. Checked against the CPU engine (greedy), against
// the host sampler on the same backend (seeded draws: the same tokens), and for validity: every
// token is one the grammar allowed, and a finished document validates.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/cuda/cuda_engine_backend.h"
#include "backend/device.h"
#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"
#include "grammar/constraint_compiler.h"
#include "greedy_agreement.h"
#include "random_inputs.h"
#include "require_cuda_device.h"
#include "synthetic_model_fixture.h"

namespace lazyattn {
namespace {

// The small synthetic Llama of test_cuda_engine.cpp (the same file), its byte-level BPE
// vocabulary able to spell any JSON.
engine::LoadedModel& model_on(backend::Device device) {
    static std::map<backend::Device, engine::LoadedModel> models;
    auto it = models.find(device);
    if (it == models.end()) {
        synthetic::SyntheticModelOptions o;
        o.arch = "llama";
        o.seed = 7;
        o.hidden = 128;
        o.num_heads = 2;
        o.num_kv_heads = 1;
        o.ffn = 256;
        o.num_layers = 2;
        o.context_length = 1024;
        o.weight_type = loader::GgmlType::kBF16;
        backend::set_cuda_backend_factory(&backend::cuda::make_cuda_engine_backend);
        auto lm = engine::load_model(testing::synthetic_model_path(o, "cuda-engine-llama"), device, 2);
        EXPECT_TRUE(lm.ok()) << lm.status().to_string();
        it = models.emplace(device, std::move(lm).value()).first;
    }
    return it->second;
}

std::unique_ptr<engine::SyncEngine> make_engine(backend::Device device) {
    auto& lm = model_on(device);
    engine::EngineConfig c;
    c.kv_cache_mb = 8;
    c.kv_types = kernels::same_kv_types(kernels::KvDtype::kBF16);
    c.check_integrity = true;
    return std::make_unique<engine::SyncEngine>(*lm.model, *lm.tokenizer, c);
}

// A classification with a bounded number: short enough to finish within the tokens asked.
constexpr const char* kSchema = R"({"type": "object", "properties": {
    "answer": {"enum": ["yes", "no", "maybe"]},
    "score": {"type": "integer", "minimum": 0, "maximum": 99}},
    "required": ["answer", "score"]})";
constexpr int32_t kTokens = 40;

std::shared_ptr<const grammar::CompiledConstraint> compiled_schema() {
    static grammar::ConstraintCompiler compiler(*model_on(backend::Device::kCpu).tokenizer);
    grammar::ConstraintSpec spec;
    spec.kind = grammar::ConstraintKind::kJsonSchema;
    spec.text = kSchema;
    auto c = compiler.compile(spec);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? c.value() : nullptr;
}

engine::RagRequest constrained_request(std::mt19937_64& rng) {
    const int32_t vocab = model_on(backend::Device::kCpu).model->config().vocab_size;
    engine::RagRequest r;
    auto random_tokens = [&](int32_t n) {
        std::vector<int32_t> t(static_cast<size_t>(n));
        for (auto& x : t) x = int32_t(3 + rng() % uint64_t(vocab - 3));
        return t;
    };
    r.segments = {random_tokens(13)};
    r.tail = random_tokens(7);
    r.max_tokens = kTokens;
    r.ignore_eos = true;  // a finished document is followed by stop tokens: every run has kTokens
    r.sampling.constraint = compiled_schema();
    return r;
}

// Every token was one the grammar allowed at its place (once the document is complete: a stop
// token); a document that completed parses and holds the schema. Returns whether it completed.
bool expect_valid(const std::vector<int32_t>& tokens, const std::string& what) {
    const tokenizer::Tokenizer& tok = *model_on(backend::Device::kCpu).tokenizer;
    auto matcher = compiled_schema()->new_matcher();
    std::vector<int32_t> document;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (matcher->terminated()) {
            EXPECT_TRUE(tok.is_end_of_generation(tokens[i])) << what << ": token " << i << " after the document";
            continue;
        }
        if (!matcher->accept(tokens[i])) {
            ADD_FAILURE() << what << ": token " << i << " (" << tokens[i] << ") is not one the grammar allows";
            return false;
        }
        if (!tok.is_end_of_generation(tokens[i])) document.push_back(tokens[i]);
    }
    if (!matcher->terminated()) return false;
    const std::string text = tok.decode(document);
    const auto j = nlohmann::json::parse(text, nullptr, false);
    EXPECT_TRUE(j.is_object()) << what << ": " << text;
    if (!j.is_object()) return true;
    EXPECT_TRUE(j.contains("answer") && j["answer"].is_string()) << what << ": " << text;
    EXPECT_TRUE(j.contains("score") && j["score"].is_number_integer() && j["score"].get<int>() >= 0 &&
                j["score"].get<int>() <= 99)
        << what << ": " << text;
    EXPECT_EQ(j.size(), 2u) << what << ": " << text;
    return true;
}

class CudaEngineConstrained : public ::testing::Test {
protected:
    void SetUp() override {
        LA_SKIP_WITHOUT_CUDA_DEVICE();
        if (!grammar::engine_available()) GTEST_SKIP() << "built without XGrammar";
    }
};

TEST_F(CudaEngineConstrained, GreedyOutputEqualsTheCpuEngineUnderTheSameSchema) {
    std::mt19937_64 rng(testing::test_seed() + 11);
    auto cpu = make_engine(backend::Device::kCpu);
    auto gpu = make_engine(backend::Device::kCuda);
    int completed = 0;
    for (int i = 0; i < 3; ++i) {
        const auto req = constrained_request(rng);
        const int64_t device_steps = gpu->core().runner().num_device_sampled_steps();
        auto a = cpu->run(req), b = gpu->run(req);
        ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string() << b.status().to_string();
        ASSERT_EQ(b->token_ids.size(), size_t(kTokens));
        // Sampled where the logits live: one id per step came back, not a row of logits.
        EXPECT_GE(gpu->core().runner().num_device_sampled_steps() - device_steps, kTokens);
        EXPECT_EQ(cpu->core().runner().num_device_sampled_steps(), 0);
        const std::string what = "request " + std::to_string(i);
        testing::expect_greedy_equal_up_to_a_near_tie(*cpu, model_on(backend::Device::kCpu).model->config().vocab_size,
                                                      req, a->token_ids, b->token_ids, testing::kBf16LogitTol, what);
        expect_valid(a->token_ids, what + " (cpu)");
        completed += expect_valid(b->token_ids, what + " (cuda)");
    }
    EXPECT_GE(completed, 1) << "no document completed within " << kTokens << " tokens";
}

// Seeded temperature / top-k / top-p rows under the schema, sampled on the device, pick the
// tokens the host sampler picks on the same backend (the same request asking for logprobs takes
// the host path): the mask was applied where the logits live, before the same draw. Without it
// the device would pick tokens the grammar refuses (the random model's logits know no JSON).
// All of them in the same steps, with an unconstrained row beside them, give the same tokens.
TEST_F(CudaEngineConstrained, SampledRowsAreMaskedOnTheDeviceAsTheHostMasksThem) {
    std::mt19937_64 rng(testing::test_seed() + 12);
    struct Setting {
        float temperature;
        int32_t top_k;
        float top_p;
    };
    const Setting settings[] = {{0.8f, 0, 1.0f}, {1.5f, 5, 1.0f}, {1.0f, 0, 0.9f}, {2.0f, 0, 1.0f}};
    std::vector<engine::RagRequest> requests;
    std::vector<std::vector<int32_t>> alone;
    int completed = 0;
    for (const Setting& s : settings) {
        auto req = constrained_request(rng);
        req.sampling.temperature = s.temperature;
        req.sampling.top_k = s.top_k;
        req.sampling.top_p = s.top_p;
        req.sampling.seed = rng();
        auto device = make_engine(backend::Device::kCuda);
        auto host = make_engine(backend::Device::kCuda);
        auto d = device->run(req);
        ASSERT_TRUE(d.ok()) << d.status().to_string();
        ASSERT_EQ(d->token_ids.size(), size_t(kTokens));
        EXPECT_GE(device->core().runner().num_device_sampled_steps(), kTokens) << "not sampled on the device";
        auto host_req = req;
        host_req.sampling.logprobs = 0;
        auto h = host->run(host_req);
        ASSERT_TRUE(h.ok()) << h.status().to_string();
        EXPECT_EQ(host->core().runner().num_device_sampled_steps(), 0) << "logprobs rows must take the host path";
        const std::string what = "temperature " + std::to_string(s.temperature) + " top_k " + std::to_string(s.top_k) +
                                 " top_p " + std::to_string(s.top_p);
        EXPECT_EQ(d->token_ids, h->token_ids) << what;
        completed += expect_valid(d->token_ids, what);
        requests.push_back(req);
        alone.push_back(d->token_ids);
    }
    EXPECT_GE(completed, 1) << "no document completed within " << kTokens << " tokens";

    auto free_row = constrained_request(rng);
    free_row.sampling.constraint = nullptr;
    auto free_alone = make_engine(backend::Device::kCuda)->run(free_row);
    ASSERT_TRUE(free_alone.ok());
    requests.push_back(free_row);
    alone.push_back(free_alone->token_ids);
    auto gpu = make_engine(backend::Device::kCuda);
    engine::EngineCore& core = gpu->core();
    std::vector<std::shared_ptr<engine::RequestHandle>> handles;
    for (const auto& req : requests) {
        auto h = core.add(req);
        ASSERT_TRUE(h.ok()) << h.status().to_string();
        handles.push_back(*h);
    }
    while (core.step()) {
    }
    for (size_t i = 0; i < handles.size(); ++i) EXPECT_EQ(handles[i]->wait().token_ids, alone[i]) << "request " << i;
    EXPECT_GE(core.runner().num_device_sampled_steps(), kTokens);
}

}  // namespace
}  // namespace lazyattn
