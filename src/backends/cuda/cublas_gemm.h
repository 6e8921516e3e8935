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

namespace lazyattn::backends::cuda {

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

class CublasGemm {
public:
    // Creates the cuBLASLt handle and a workspace on the current device.
    static Expected<std::unique_ptr<CublasGemm>> create();
    ~CublasGemm();
    CublasGemm(const CublasGemm&) = delete;
    CublasGemm& operator=(const CublasGemm&) = delete;

    Status run(const GemmParams& p, cudaStream_t stream);

private:
    struct Plan;
    CublasGemm() = default;
    Expected<const Plan*> plan_for(const GemmParams& p);

    void* handle_ = nullptr;     // cublasLtHandle_t
    void* workspace_ = nullptr;  // device memory
    size_t workspace_bytes_ = 0;
    std::map<std::tuple<int64_t, int64_t, int64_t, int>, std::unique_ptr<Plan>> plans_;
};

}  // namespace lazyattn::backends::cuda
