// A Backend made of the scalar reference ops: slow and obvious, for checking whole forward
// passes of optimized backends end to end.
#include "backend/backend.h"
#include "backend/host_kv_ops.h"
#include "kernels/ref/kquant_ref.h"
#include "kernels/ref/quant_ref.h"
#include "kernels/ref/reference_ops.h"

namespace lazyattn::backend {
namespace {

class ReferenceBackend final : public Backend {
public:
    std::string name() const override { return "reference"; }
    int num_threads() const override { return 1; }
    void rmsnorm(const float* x, const float* w, float* out, int64_t rows, int64_t dim, float eps) override {
        kernels::ref::rmsnorm(x, w, out, rows, dim, eps);
    }
    void matmul(const kernels::MatmulParams& p) override {
        if (p.w_type == kernels::GgmlType::kF32) {
            kernels::ref::matmul(p.x, static_cast<const float*>(p.w), p.bias, p.y, p.num_rows, p.in_dim, p.out_dim);
            return;
        }
        kernels::ref::typed_matmul(p.w_type, p.w, p.x, p.y, p.num_rows, p.in_dim, p.out_dim);
        if (p.bias != nullptr) {
            for (int64_t r = 0; r < p.num_rows; ++r)
                for (int64_t o = 0; o < p.out_dim; ++o) p.y[r * p.out_dim + o] += p.bias[o];
        }
    }
    void swiglu(const float* g, const float* u, float* out, int64_t n) override { kernels::ref::swiglu(g, u, out, n); }
    void geglu(const float* g, const float* u, float* out, int64_t n) override { kernels::ref::geglu(g, u, out, n); }
    void add_inplace(float* x, const float* y, int64_t n) override {
        for (int64_t i = 0; i < n; ++i) x[i] += y[i];
    }
    void rope_apply(const kernels::RopeApplyParams& p) override { kernels::ref::rope_apply(p); }
    void attention(const kernels::AttentionParams& p) override { kernels::ref::attention(p); }
    bool attention_mass_supported() const override { return true; }
    void attention_mass(const kernels::AttentionParams& p, float* mass) override {
        kernels::ref::attention_mass(p, mass);
    }

    Expected<std::unique_ptr<KvMemory>> allocate_kv(const kv::KvShape& shape) override {
        LA_ASSIGN_OR_RETURN(auto kv, HostKvMemory::allocate(shape));
        return std::unique_ptr<KvMemory>(std::move(kv));
    }
    void kv_store(KvMemory& kv, int32_t layer, const float* k, const float* v, const int32_t* slots,
                  int32_t n) override {
        host_kv_store(kv, layer, k, v, slots, n);
    }
    void kv_copy_rotate(KvMemory& kv, int32_t layer, const KvCopyRotateParams& p) override {
        host_kv_copy_rotate(kv, layer, p, kernels::ref::rope_apply, scratch_);
    }
    bool kv_deviation_supported() const override { return true; }
    void kv_deviation(const KvMemory& kv, int32_t layer, const float* k, const float* v, const int32_t* slots,
                      int32_t n, float* out) override {
        host_kv_deviation(kv, layer, k, v, slots, n, out);
    }
    void embedding_lookup(const EmbeddingParams& p) override { host_embedding_lookup(p); }

private:
    HostKvScratch scratch_;
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace lazyattn::backend
