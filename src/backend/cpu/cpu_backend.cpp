// The CPU backend: OpenBLAS for GEMMs (its own threads, sized to ours), our thread pool for the
// rest. Only one step runs at a time, so the two never compete.
#include <cblas.h>

#include <thread>

#include "backend/backend.h"
#include "backend/cpu/attention_cpu.h"
#include "backend/cpu/attention_mass_cpu.h"
#include "backend/cpu/elementwise_cpu.h"
#include "backend/cpu/quant_matmul.h"
#include "backend/cpu/typed_matmul.h"
#include "backend/host_kv_ops.h"
#include "core/thread_pool.h"

namespace lazyattn::backend::cpu {
namespace {

class CpuBackend final : public backend::Backend {
public:
    explicit CpuBackend(int num_threads) : pool_(num_threads) { openblas_set_num_threads(pool_.num_threads()); }
    std::string name() const override { return "cpu"; }
    int num_threads() const override { return pool_.num_threads(); }

    void rmsnorm(const float* x, const float* w, float* out, int64_t rows, int64_t dim, float eps) override {
        cpu::rmsnorm(x, w, out, rows, dim, eps, pool_);
    }
    void matmul(const kernels::MatmulParams& p) override {
        if (is_typed_weight(p.w_type)) {
            typed_matmul(p, pool_, scratch_);
            return;
        }
        if (p.w_type != kernels::GgmlType::kF32) {
            quant_matmul(p, pool_, scratch_);
            return;
        }
        const float* w = static_cast<const float*>(p.w);
        if (p.num_rows == 1) {
            cblas_sgemv(CblasRowMajor, CblasNoTrans, int(p.out_dim), int(p.in_dim), 1.0f, w, int(p.in_dim), p.x, 1,
                        0.0f, p.y, 1);
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(p.num_rows), int(p.out_dim), int(p.in_dim), 1.0f,
                        p.x, int(p.in_dim), w, int(p.in_dim), 0.0f, p.y, int(p.out_dim));
        }
        if (p.bias != nullptr) {
            for (int64_t r = 0; r < p.num_rows; ++r) add_inplace(p.y + r * p.out_dim, p.bias, p.out_dim);
        }
    }
    std::shared_ptr<const void> prepare_weight(const void* w, kernels::GgmlType type, int64_t in_dim,
                                               int64_t out_dim) override {
        if (is_typed_weight(type)) return prepare_typed_weight(w, type, in_dim, out_dim, weight_arena_, pool_);
        return prepare_quant_weight(w, type, in_dim, out_dim, weight_arena_);
    }
    void matmuls(const kernels::MatmulParams* ps, int count) override {
        if (quant_matmul_shared_input(ps, count, pool_, scratch_)) return;
        for (int i = 0; i < count; ++i) matmul(ps[i]);
    }
    void swiglu(const float* gate, const float* up, float* out, int64_t n) override {
        cpu::swiglu(gate, up, out, n, pool_);
    }
    void geglu(const float* gate, const float* up, float* out, int64_t n) override {
        cpu::geglu(gate, up, out, n, pool_);
    }
    void add_inplace(float* x, const float* y, int64_t n) override { cpu::add_inplace(x, y, n); }
    void rope_apply(const kernels::RopeApplyParams& p) override { cpu::rope_apply(p, pool_); }
    Status plan_attention(const kernels::AttentionStep& step) override {
        step_plan_.build(step);
        return {};
    }
    void attention(const kernels::AttentionParams& p) override {
        if (p.planned && step_plan_.built()) {
            cpu::attention(p, step_plan_, pool_);
        } else {
            cpu::attention(p, pool_);
        }
    }

    bool attention_mass_supported() const override { return true; }
    void attention_mass(const kernels::AttentionParams& p, float* mass) override {
        cpu::attention_mass(p, mass, pool_);
    }

    Expected<std::unique_ptr<backend::KvMemory>> allocate_kv(const kv::KvShape& shape) override {
        LA_ASSIGN_OR_RETURN(auto kv, backend::HostKvMemory::allocate(shape));
        return std::unique_ptr<backend::KvMemory>(std::move(kv));
    }
    void kv_store(backend::KvMemory& kv, int32_t layer, const float* k, const float* v, const int32_t* slots,
                  int32_t n) override {
        backend::host_kv_store(kv, layer, k, v, slots, n);
    }
    void kv_copy_rotate(backend::KvMemory& kv, int32_t layer, const backend::KvCopyRotateParams& p) override {
        backend::host_kv_copy_rotate(
            kv, layer, p, [this](const kernels::RopeApplyParams& r) { rope_apply(r); }, kv_scratch_);
    }
    bool kv_deviation_supported() const override { return true; }
    void kv_deviation(const backend::KvMemory& kv, int32_t layer, const float* k, const float* v, const int32_t* slots,
                      int32_t n, float* out) override {
        // A few thousand rows once per request: memory-bound, not worth threads.
        backend::host_kv_deviation(kv, layer, k, v, slots, n, out);
    }
    void embedding_lookup(const backend::EmbeddingParams& p) override { backend::host_embedding_lookup(p); }

private:
    backend::HostKvScratch kv_scratch_;
    ThreadPool pool_;
    cpu::AttentionPlan step_plan_;  // the current step's (plan_attention)
    std::vector<uint8_t> scratch_;  // quantized activations
    WeightArena weight_arena_;
};

}  // namespace
}  // namespace lazyattn::backend::cpu

namespace lazyattn::backend {

std::unique_ptr<Backend> make_cpu_backend(int num_threads) {
    if (num_threads <= 0) num_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    return std::make_unique<backend::cpu::CpuBackend>(num_threads);
}

}  // namespace lazyattn::backend
