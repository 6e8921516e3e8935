// cuBLASLt GEMM: row-major y = x W^T is computed as the column-major product y^T = W^T' x^T
// (A = W viewed k x n, transposed; B = x viewed k x m). Descriptors and the heuristic's algorithm
// are built once per (m, n, k, output type) and kept.
#include "backends/cuda/cublas_gemm.h"

#include <cublasLt.h>

#include <string>

#include "backends/cuda/cuda_check.h"

namespace lazyattn::backends::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

Status cublas_status(cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return {};
    return internal_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

#define LA_CUBLAS_RETURN_IF_ERROR(call) LA_RETURN_IF_ERROR(cublas_status((call), #call))

cublasLtHandle_t lt(void* h) { return static_cast<cublasLtHandle_t>(h); }

}  // namespace

struct CublasGemm::Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    ~Plan() {
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

Expected<std::unique_ptr<CublasGemm>> CublasGemm::create() {
    std::unique_ptr<CublasGemm> g(new CublasGemm());
    cublasLtHandle_t handle = nullptr;
    LA_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&handle));
    g->handle_ = handle;
    LA_CUDA_RETURN_IF_ERROR(cudaMalloc(&g->workspace_, kWorkspaceBytes));
    g->workspace_bytes_ = kWorkspaceBytes;
    return g;
}

CublasGemm::~CublasGemm() {
    plans_.clear();
    if (workspace_) cudaFree(workspace_);
    if (handle_) cublasLtDestroy(lt(handle_));
}

Expected<const CublasGemm::Plan*> CublasGemm::plan_for(const GemmParams& p) {
    const auto key = std::make_tuple(p.m, p.n, p.k, int(p.y_type));
    auto it = plans_.find(key);
    if (it != plans_.end()) return static_cast<const Plan*>(it->second.get());
    auto plan = std::make_unique<Plan>();
    const cudaDataType_t y_type = p.y_type == GemmOutType::kF32 ? CUDA_R_32F : CUDA_R_16BF;
    LA_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    LA_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
    LA_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
    LA_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, uint64_t(p.k), uint64_t(p.n), p.k));
    LA_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, uint64_t(p.k), uint64_t(p.m), p.k));
    LA_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->c, y_type, uint64_t(p.n), uint64_t(p.m), p.n));
    cublasLtMatmulPreference_t pref = nullptr;
    LA_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = workspace_bytes_;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                            sizeof(ws));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS) {
        s = cublasLtMatmulAlgoGetHeuristic(lt(handle_), plan->op, plan->a, plan->b, plan->c, plan->c, pref, 1, &result,
                                           &found);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    LA_RETURN_IF_ERROR(cublas_status(s, "cublasLtMatmulAlgoGetHeuristic"));
    if (found == 0) return unsupported("gemm: cuBLASLt has no algorithm for this shape");
    plan->algo = result.algo;
    const Plan* raw = plan.get();
    plans_.emplace(key, std::move(plan));
    return raw;
}

Status CublasGemm::run(const GemmParams& p, cudaStream_t stream) {
    if (p.m == 0 || p.n == 0) return {};
    if (p.m < 0 || p.n < 0 || p.k <= 0) return invalid_argument("gemm: bad shape");
    LA_ASSIGN_OR_RETURN(const Plan* plan, plan_for(p));
    const float alpha = 1.0f, beta = 0.0f;
    LA_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(lt(handle_), plan->op, &alpha, p.w, plan->a, p.x, plan->b, &beta, p.y,
                                             plan->c, p.y, plan->c, &plan->algo, workspace_, workspace_bytes_, stream));
    return {};
}

}  // namespace lazyattn::backends::cuda
