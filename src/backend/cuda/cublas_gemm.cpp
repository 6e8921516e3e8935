// cuBLASLt GEMM: row-major y = x W^T is computed as the column-major product y^T = W^T' x^T
// (A = W viewed k x n, transposed; B = x viewed k x m). Descriptors and the heuristic's algorithm
// are built once per GemmPlanKey (shape, output type, operand alignment) and kept.
//
// Preferences: the operands' real alignment (MIN_ALIGNMENT_A/B/C/D_BYTES), and split-K partial
// sums reduced in the fp32 compute type (REDUCTION_SCHEME_MASK): by default cuBLASLt may also
// sum them in place or in the output type, i.e. in bf16 for a bf16 output, losing precision
// that grows with the number of splits.
//
// libcublasLt is loaded with dlopen on first use rather than linked: the binaries then start on a
// host whose cuBLAS cannot be found, and only GEMMs report the error.
#include "backend/cuda/cublas_gemm.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <string>

#include "backend/cuda/cuda_check.h"

namespace lazyattn::backend::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// clang-format off: one entry point a line (clang-format 14 reflows an X-macro list differently
// on every pass, so the file would never be stable).
#define LA_LT_FUNCTIONS(X)                  \
    X(cublasLtCreate)                       \
    X(cublasLtDestroy)                      \
    X(cublasLtMatmulDescCreate)             \
    X(cublasLtMatmulDescDestroy)            \
    X(cublasLtMatmulDescSetAttribute)       \
    X(cublasLtMatrixLayoutCreate)           \
    X(cublasLtMatrixLayoutDestroy)          \
    X(cublasLtMatmulPreferenceCreate)       \
    X(cublasLtMatmulPreferenceDestroy)      \
    X(cublasLtMatmulPreferenceSetAttribute) \
    X(cublasLtMatmulAlgoGetHeuristic)       \
    X(cublasLtMatmul)
// clang-format on

// The cuBLASLt entry points, resolved from the shared library.
struct LtApi {
#define LA_LT_MEMBER(name) decltype(&::name) name = nullptr;
    LA_LT_FUNCTIONS(LA_LT_MEMBER)
#undef LA_LT_MEMBER
};

Expected<LtApi> load_lt_api() {
    const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    for (const char* dir : {"/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/"}) {
        if (lib == nullptr) lib = dlopen((dir + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (lib == nullptr) {
        const char* err = dlerror();
        return not_found("cannot load " + soname + " (add its folder to LD_LIBRARY_PATH): " + (err ? err : ""));
    }
    LtApi api;
#define LA_LT_RESOLVE(name)                                             \
    api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name)); \
    if (api.name == nullptr) return not_found(soname + " lacks " #name);
    LA_LT_FUNCTIONS(LA_LT_RESOLVE)
#undef LA_LT_RESOLVE
    return api;
}

// Loaded once per process; the library stays loaded.
Expected<const LtApi*> lt_api() {
    static const Expected<LtApi> api = load_lt_api();
    if (!api.ok()) return api.status();
    return &api.value();
}

const LtApi& lt() { return **lt_api(); }

Status cublas_status(cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return {};
    return internal_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

#define LA_CUBLAS_RETURN_IF_ERROR(call) LA_RETURN_IF_ERROR(cublas_status((call), #call))

cublasLtHandle_t handle_of(void* h) { return static_cast<cublasLtHandle_t>(h); }

}  // namespace

struct CublasGemm::Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    ~Plan() {
        if (a) lt().cublasLtMatrixLayoutDestroy(a);
        if (b) lt().cublasLtMatrixLayoutDestroy(b);
        if (c) lt().cublasLtMatrixLayoutDestroy(c);
        if (op) lt().cublasLtMatmulDescDestroy(op);
    }
};

Expected<std::unique_ptr<CublasGemm>> CublasGemm::create() {
    LA_RETURN_IF_ERROR(lt_api().status());
    std::unique_ptr<CublasGemm> g(new CublasGemm());
    cublasLtHandle_t handle = nullptr;
    LA_CUBLAS_RETURN_IF_ERROR(lt().cublasLtCreate(&handle));
    g->handle_ = handle;
    LA_CUDA_RETURN_IF_ERROR(cudaMalloc(&g->workspace_, kWorkspaceBytes));
    g->workspace_bytes_ = kWorkspaceBytes;
    return g;
}

CublasGemm::~CublasGemm() {
    plans_.clear();
    if (workspace_) cudaFree(workspace_);
    if (handle_) lt().cublasLtDestroy(handle_of(handle_));
}

Expected<const CublasGemm::Plan*> CublasGemm::plan_for(const GemmParams& p) {
    const GemmPlanKey key = GemmPlanKey::of(p);
    auto it = plans_.find(key);
    if (it != plans_.end()) return static_cast<const Plan*>(it->second.get());
    auto plan = std::make_unique<Plan>();
    const cudaDataType_t y_type = p.y_type == GemmOutType::kF32 ? CUDA_R_32F : CUDA_R_16BF;
    LA_CUBLAS_RETURN_IF_ERROR(lt().cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    LA_CUBLAS_RETURN_IF_ERROR(
        lt().cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
    LA_CUBLAS_RETURN_IF_ERROR(
        lt().cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
    LA_CUBLAS_RETURN_IF_ERROR(
        lt().cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, uint64_t(p.k), uint64_t(p.n), p.k));
    LA_CUBLAS_RETURN_IF_ERROR(
        lt().cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, uint64_t(p.k), uint64_t(p.m), p.k));
    LA_CUBLAS_RETURN_IF_ERROR(lt().cublasLtMatrixLayoutCreate(&plan->c, y_type, uint64_t(p.n), uint64_t(p.m), p.n));
    cublasLtMatmulPreference_t pref = nullptr;
    LA_CUBLAS_RETURN_IF_ERROR(lt().cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = workspace_bytes_;
    cublasStatus_t s =
        lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    // fp32 output: fp32 partials whichever scheme; bf16 output: only the compute-type (fp32) one.
    const uint32_t reduction = p.y_type == GemmOutType::kF32 ? uint32_t(CUBLASLT_REDUCTION_SCHEME_MASK)
                                                             : uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
    const uint32_t alignments[4] = {key.align_w, key.align_x, key.align_y, key.align_y};  // A, B, C, D
    const cublasLtMatmulPreferenceAttributes_t alignment_attrs[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    if (s == CUBLAS_STATUS_SUCCESS) {
        s = lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
                                                      sizeof(reduction));
    }
    for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; ++i) {
        s = lt().cublasLtMatmulPreferenceSetAttribute(pref, alignment_attrs[i], &alignments[i], sizeof(alignments[i]));
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS) {
        s = lt().cublasLtMatmulAlgoGetHeuristic(handle_of(handle_), plan->op, plan->a, plan->b, plan->c, plan->c, pref,
                                                1, &result, &found);
    }
    lt().cublasLtMatmulPreferenceDestroy(pref);
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
    LA_CUBLAS_RETURN_IF_ERROR(lt().cublasLtMatmul(handle_of(handle_), plan->op, &alpha, p.w, plan->a, p.x, plan->b,
                                                  &beta, p.y, plan->c, p.y, plan->c, &plan->algo, workspace_,
                                                  workspace_bytes_, stream));
    return {};
}

}  // namespace lazyattn::backend::cuda
