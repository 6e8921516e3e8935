// The emulated build's CublasGemm: the same interface computed by a plain loop on the host (there
// is no cuBLAS without a GPU). Only the emulated test target links it.
#include <cmath>

#include "backend/cuda/cublas_gemm.h"

namespace lazyattn::backend::cuda {

struct CublasGemm::Plan {};

Expected<std::unique_ptr<CublasGemm>> CublasGemm::create() { return std::unique_ptr<CublasGemm>(new CublasGemm()); }

CublasGemm::~CublasGemm() = default;

// Plans are only counted (one per key, as the real build caches them), so tests can check the key.
Expected<const CublasGemm::Plan*> CublasGemm::plan_for(const GemmParams& p) {
    auto& plan = plans_[GemmPlanKey::of(p)];
    if (!plan) plan = std::make_unique<Plan>();
    return static_cast<const Plan*>(plan.get());
}

Status CublasGemm::run(const GemmParams& p, cudaStream_t) {
    if (p.m == 0 || p.n == 0) return {};
    if (p.m < 0 || p.n < 0 || p.k <= 0) return invalid_argument("gemm: bad shape");
    LA_RETURN_IF_ERROR(plan_for(p).status());
    for (int64_t r = 0; r < p.m; ++r) {
        for (int64_t o = 0; o < p.n; ++o) {
            float acc = 0.0f;
            for (int64_t i = 0; i < p.k; ++i) {
                acc = std::fma(__bfloat162float(p.x[r * p.k + i]), __bfloat162float(p.w[o * p.k + i]), acc);
            }
            if (p.y_type == GemmOutType::kF32) {
                static_cast<float*>(p.y)[r * p.n + o] = acc;
            } else {
                static_cast<__nv_bfloat16*>(p.y)[r * p.n + o] = __float2bfloat16_rn(acc);
            }
        }
    }
    return {};
}

}  // namespace lazyattn::backend::cuda
