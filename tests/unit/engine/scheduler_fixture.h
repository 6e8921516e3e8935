// The engine tests' shared model: a tiny synthetic model with quantized weights, written once per
// test binary, and an EngineConfig that checks integrity after every step.
//
// The scheduler tests run on every backend through one parameterised fixture (OnEachBackend):
// test_engine instantiates them on the CPU; test_scheduler_cuda_emulated (tests/cuda, built where
// nvcc is) compiles the same sources with LAZYATTN_ENGINE_TESTS_ON_CUDA and instantiates them on
// the CUDA backend in the CPU emulator, test_scheduler_cuda on a GPU (scripts/gpu_check.sh). model() and config() follow the backend of the running
// test.
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/device.h"
#include "engine/engine_config.h"
#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"
#include "greedy_agreement.h"
#include "synthetic_model_fixture.h"
#ifdef LAZYATTN_ENGINE_TESTS_ON_CUDA
#include "backend/cuda/cuda_engine_backend.h"
#include "require_cuda_device.h"
#endif

namespace lazyattn::engine::testing_support {

// The backend the running test computes on (set by OnEachBackend; the CPU for plain tests).
inline backend::Device& device_under_test() {
    static backend::Device device = backend::Device::kCpu;
    return device;
}

inline LoadedModel& model_on(backend::Device device) {
    static std::map<backend::Device, LoadedModel> models;
    auto it = models.find(device);
    if (it != models.end()) return it->second;
    // Quantized weights: every row is then computed by the same integer kernels whatever the
    // batch around it, so batched, preempted and one-by-one runs give bit-identical logits
    // (OpenBLAS's fp32 GEMM picks kernels by batch size, which can flip a near-tie). The CUDA
    // backend widens them to bf16 at load; its GEMMs and attention compute each row the same way
    // whatever the batch (no split-K at these lengths), so the same holds there.
    synthetic::SyntheticModelOptions o;
    o.seed = 9;
    o.context_length = 2048;
    o.weight_type = loader::GgmlType::kQ8_0;
    std::string tag = "sched";
    if (device == backend::Device::kCuda) {
#ifdef LAZYATTN_ENGINE_TESTS_ON_CUDA
        backend::set_cuda_backend_factory(&backend::cuda::make_cuda_engine_backend);
#endif
        // A head size the CUDA kernels take (64), and one head: every kernel thread is a fiber in
        // the emulator, so the smallest such model keeps these tests within minutes there.
        o.num_heads = 1;
        o.num_kv_heads = 1;
        tag = "sched-cuda";
    }
    auto m = load_model(testing::synthetic_model_path(o, tag), device, 2);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return models.emplace(device, std::move(m).value()).first->second;
}

inline LoadedModel& model() { return model_on(device_under_test()); }

inline EngineConfig config(CacheMode mode, int32_t kv_mb, int32_t max_batch_tokens = 64) {
    EngineConfig c;
    c.cache_mode = mode;
    c.kv_cache_mb = kv_mb;
    c.max_batch_tokens = max_batch_tokens;
    c.check_integrity = true;
    // The CUDA kernels read bf16 KV (--device cuda defaults to it).
    if (device_under_test() == backend::Device::kCuda) c.kv_types = kernels::same_kv_types(kernels::KvDtype::kBF16);
    return c;
}

// One request's greedy tokens computed two ways on the backend under test (another batch shape,
// chunking, a preemption's recompute): equal on the CPU backend, which is exact; on the bf16 CUDA
// backend equal up to a near tie (tests/greedy_agreement.h), judged by a fresh engine in `mode`.
inline void expect_same_greedy(CacheMode mode, const RagRequest& request, const std::vector<int32_t>& want,
                               const std::vector<int32_t>& got, const std::string& what) {
    if (device_under_test() != backend::Device::kCuda || got == want) {
        EXPECT_EQ(got, want) << what;
        return;
    }
    SyncEngine reference(*model().model, *model().tokenizer, config(mode, 32));
    testing::expect_greedy_equal_up_to_a_near_tie(reference, model().model->config().vocab_size, request, want, got,
                                                  testing::kBf16LogitTol, what);
}

// `n` random non-special token ids.
inline std::vector<int32_t> random_tokens(std::mt19937_64& rng, int32_t n) {
    const int32_t vocab = model().model->config().vocab_size;
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(3 + rng() % (vocab - 3));
    return t;
}

// The backends this binary runs the parameterised tests on.
inline std::vector<backend::Device> backends_under_test() {
#ifdef LAZYATTN_ENGINE_TESTS_ON_CUDA
    return {backend::Device::kCuda};
#else
    return {backend::Device::kCpu};
#endif
}

inline std::string backend_test_name(const ::testing::TestParamInfo<backend::Device>& info) {
    return backend::device_name(info.param);
}

// A test run once per backend: TEST_P(SuiteDerivedFromThis, Name), and
// INSTANTIATE_ON_EACH_BACKEND(Suite) once per suite.
class OnEachBackend : public ::testing::TestWithParam<backend::Device> {
protected:
    void SetUp() override {
#ifdef LAZYATTN_ENGINE_TESTS_ON_CUDA
        if (GetParam() == backend::Device::kCuda) LA_SKIP_WITHOUT_CUDA_DEVICE();
#endif
        device_under_test() = GetParam();
    }
    void TearDown() override { device_under_test() = backend::Device::kCpu; }
};

}  // namespace lazyattn::engine::testing_support

#define INSTANTIATE_ON_EACH_BACKEND(suite)                                                                    \
    INSTANTIATE_TEST_SUITE_P(Backends, suite,                                                                 \
                             ::testing::ValuesIn(::lazyattn::engine::testing_support::backends_under_test()), \
                             ::lazyattn::engine::testing_support::backend_test_name)
