// Linear layers on tensor cores through cuBLASLt: y[m, n] = x[m, k] W[n, k]^T with bf16 x and W
// (W row-major as GGUF stores a layer's weight), fp32 accumulation, fp32 or bf16 output.
// Reference: kernels::ref::matmul on the bf16 values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "core/status.h"

namespace lazyattn::backend::cuda {

enum class GemmOutType { kF32, kBF16 };

struct GemmParams {
    const __nv_bfloat16* x;  // [m, k] row-major
    const __nv_bfloat16* w;  // [n, k] row-major
    void* y;                 // [m, n] row-major, float or __nv_bfloat16 by y_type
    GemmOutType y_type;
    int64_t m;
    int64_t n;
    int64_t k;
};

// The largest power of two, at most 256, that divides the address (256 for null).
inline uint32_t pointer_alignment(const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    uint32_t align = 1;
    while (align < 256 && (a & align) == 0) align <<= 1;
    return align;
}

// What a cached plan depends on: shape, output type and the operands' real pointer alignment.
// cuBLASLt's heuristic assumes 256-byte aligned buffers unless told otherwise
// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES); a plan chosen for aligned buffers may use vector
// loads that fault on an offset view (a Q/K/V slice of a fused projection), so the alignment is
// both a preference and part of the key.
struct GemmPlanKey {
    int64_t m = 0, n = 0, k = 0;
    int y_type = 0;
    uint32_t align_x = 0, align_w = 0, align_y = 0;

    static GemmPlanKey of(const GemmParams& p) {
        return {p.m, p.n, p.k, int(p.y_type), pointer_alignment(p.x), pointer_alignment(p.w), pointer_alignment(p.y)};
    }
    // Spelled out: nvcc compiles this header as C++17 (CMake knows no CUDA20 dialect), so no <=>.
    bool operator<(const GemmPlanKey& o) const {
        return std::tie(m, n, k, y_type, align_x, align_w, align_y) <
               std::tie(o.m, o.n, o.k, o.y_type, o.align_x, o.align_w, o.align_y);
    }
};

class CublasGemm {
public:
    // Creates the cuBLASLt handle and a workspace on the current device.
    static Expected<std::unique_ptr<CublasGemm>> create();
    ~CublasGemm();
    CublasGemm(const CublasGemm&) = delete;
    CublasGemm& operator=(const CublasGemm&) = delete;

    Status run(const GemmParams& p, cudaStream_t stream);
    // Plans built so far: one per GemmPlanKey.
    size_t num_plans() const { return plans_.size(); }

private:
    struct Plan;
    CublasGemm() = default;
    Expected<const Plan*> plan_for(const GemmParams& p);

    void* handle_ = nullptr;     // cublasLtHandle_t
    void* workspace_ = nullptr;  // device memory
    size_t workspace_bytes_ = 0;
    std::map<GemmPlanKey, std::unique_ptr<Plan>> plans_;
};

}  // namespace lazyattn::backend::cuda
