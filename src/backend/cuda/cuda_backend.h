// CudaBackend: the CUDA backend's methods, one per op. Each checks the host-visible shapes and
// settings it is given (a bad one comes back as a Status) and dispatches to the op's launcher on
// the backend's stream; work is asynchronous until synchronize(). Pointers in the params are
// device memory; their contents (spans, block ids, slots) are trusted as the plan built them.
// The KV cache is bf16, activations fp32 (bf16 where they feed a GEMM).
//
// The engine reaches it through CudaEngineBackend (cuda_engine_backend.h), which implements
// backend::Backend on top of it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "backend/cuda/cublas_gemm.h"
#include "backend/cuda/cuda_attention_params.h"
#include "backend/cuda/kv_copy_rotate.h"
#include "backend/cuda/kv_store.h"
#include "backend/cuda/sampling.h"
#include "core/status.h"
#include "kernels/params/rope_params.h"

namespace lazyattn::backend::cuda {

// Whether a CUDA device is usable; `why` (optional) receives the reason when not.
bool cuda_device_available(std::string* why);

class CudaBackend {
public:
    // Creates the backend on `device` with its own stream and cuBLASLt handle.
    static Expected<std::unique_ptr<CudaBackend>> create(int device = 0);
    ~CudaBackend();
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    cudaStream_t stream() const { return stream_; }
    int device() const { return device_; }
    int num_sms() const { return num_sms_; }
    const std::string& device_name() const { return device_name_; }
    Status synchronize();

    // Paged attention: the decode kernel when every sequence has at most one query row
    // (p.max_queries_per_seq <= 1), else the prefill kernel.
    Status attention(const CudaAttentionParams& p);
    // The same with the kernel chosen by the caller (tests, benchmarks).
    Status attention_decode(const CudaAttentionParams& p);
    Status attention_prefill(const CudaAttentionParams& p);

    Status rope_apply(const kernels::RopeApplyParams& p);
    Status kv_store(const KvStoreParams& p);
    Status kv_copy_rotate(const KvCopyRotateParams& p);

    Status rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps);
    Status rmsnorm(const float* x, const float* weight, __nv_bfloat16* out, int64_t num_rows, int64_t dim, float eps);
    Status swiglu(const float* gate, const float* up, float* out, int64_t n);
    Status swiglu(const float* gate, const float* up, __nv_bfloat16* out, int64_t n);
    Status embedding(const float* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                     int64_t vocab_size);
    Status embedding(const __nv_bfloat16* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                     int64_t vocab_size);

    Status add_inplace(float* x, const float* y, int64_t n);
    Status add_bias(float* y, const float* bias, int64_t num_rows, int64_t dim);
    Status to_bf16(const float* x, __nv_bfloat16* out, int64_t n);

    Status sample(const SampleParams& p);
    Status argmax(const float* logits, int64_t row_stride, int32_t num_rows, int32_t vocab_size, int32_t* tokens);
    // Structured output: masks logits[r, :] by the grammar's bitmask row r (sampling.h).
    Status apply_token_bitmask(float* logits, int64_t row_stride, int32_t num_rows, int32_t vocab_size,
                               const int32_t* bitmask, int32_t bitmask_words);

    Status gemm(const GemmParams& p);

private:
    CudaBackend() = default;
    Status activate();
    Status ensure_workspace(size_t floats);

    int device_ = 0;
    int num_sms_ = 1;
    std::string device_name_;
    cudaStream_t stream_ = nullptr;
    std::unique_ptr<CublasGemm> gemm_;
    float* workspace_ = nullptr;  // decode split-K partials
    size_t workspace_floats_ = 0;
};

}  // namespace lazyattn::backend::cuda
