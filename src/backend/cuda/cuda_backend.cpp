// CudaBackend: shape checks and dispatch to the launchers (see cuda_backend.h).
#include "backend/cuda/cuda_backend.h"

#include <string>

#include "backend/cuda/attention_decode.h"
#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/rope_apply.h"

namespace lazyattn::backend::cuda {
namespace {

Status check_rope(const kernels::RopeParams& r, int32_t head_dim, const char* op) {
    const std::string where = std::string(op) + ": ";
    if (r.rotary_dims < 0 || r.rotary_dims % 2 != 0 || r.rotary_dims > head_dim) {
        return invalid_argument(where + "rotary_dims must be even and at most head_dim");
    }
    if (r.rotary_dims > 0 && r.inv_freq == nullptr) return invalid_argument(where + "inv_freq is null");
    if (r.neox && r.rotary_dims % 16 != 0) return unsupported(where + "neox RoPE needs rotary_dims % 16 == 0");
    if (r.table_positions < 0 || (r.table_positions > 0 && r.cos_sin_table == nullptr)) {
        return invalid_argument(where + "bad cos/sin table");
    }
    if (r.mscale != 1.0f) return unsupported(where + "RoPE mscale (attention factor) is not implemented on CUDA");
    return {};
}

Status check_attention(const CudaAttentionParams& p) {
    if (p.num_seqs < 0 || p.num_seqs > 65535) return invalid_argument("attention: num_seqs out of range");
    if (p.num_heads <= 0 || p.num_kv_heads <= 0 || p.num_heads % p.num_kv_heads != 0 || p.num_heads > 65535) {
        return invalid_argument("attention: num_heads must be a positive multiple of num_kv_heads");
    }
    if (p.head_dim != 64 && p.head_dim != 128) return unsupported("attention: head_dim must be 64 or 128");
    if (p.block_size <= 0) return invalid_argument("attention: block_size must be positive");
    if (p.max_queries_per_seq < 0 || p.max_kv_tokens < 0 || p.num_splits < 0) {
        return invalid_argument("attention: negative plan bounds");
    }
    if (p.num_seqs > 0 &&
        (!p.q || !p.q_pos || !p.out || !p.k_cache || !p.v_cache || !p.block_ids || !p.spans || !p.seqs)) {
        return invalid_argument("attention: null pointer");
    }
    return check_rope(p.rope, p.head_dim, "attention");
}

}  // namespace

bool cuda_device_available(std::string* why) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        if (why) *why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
        cudaGetLastError();
        return false;
    }
    if (count == 0) {
        if (why) *why = "cudaGetDeviceCount reports no device";
        return false;
    }
    return true;
}

Expected<std::unique_ptr<CudaBackend>> CudaBackend::create(int device) {
    std::unique_ptr<CudaBackend> b(new CudaBackend());
    b->device_ = device;
    LA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    LA_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&b->num_sms_, cudaDevAttrMultiProcessorCount, device));
    int major = 0, minor = 0;
    LA_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    LA_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (major < 8) return unsupported("CUDA backend needs compute capability 8.0 or newer");
    b->device_name_ = "device " + std::to_string(device) + " (sm_" + std::to_string(major * 10 + minor) + ", " +
                      std::to_string(b->num_sms_) + " SMs)";
    // A blocking stream: its work is ordered after earlier work on the legacy default stream, where
    // plain cudaMemcpy/cudaMemset calls go (they may return before their copy has landed).
    LA_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&b->stream_, cudaStreamDefault));
    return b;
}

CudaBackend::~CudaBackend() {
    gemm_.reset();
    if (workspace_) cudaFree(workspace_);
    if (stream_) cudaStreamDestroy(stream_);
}

// Each op first makes the backend's device current: the stream, the workspace and the shared-
// memory opt-ins belong to it, and another backend (another GPU) may have switched devices.
Status CudaBackend::activate() {
    LA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    return {};
}

Status CudaBackend::synchronize() {
    LA_RETURN_IF_ERROR(activate());
    LA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return {};
}

Status CudaBackend::ensure_workspace(size_t floats) {
    if (floats <= workspace_floats_) return {};
    LA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    if (workspace_) LA_CUDA_RETURN_IF_ERROR(cudaFree(workspace_));
    workspace_ = nullptr;
    workspace_floats_ = 0;
    void* ptr = nullptr;
    LA_CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, floats * sizeof(float)));
    workspace_ = static_cast<float*>(ptr);
    workspace_floats_ = floats;
    return {};
}

Status CudaBackend::attention(const CudaAttentionParams& p) {
    return p.max_queries_per_seq <= 1 ? attention_decode(p) : attention_prefill(p);
}

Status CudaBackend::attention_decode(const CudaAttentionParams& p) {
    LA_RETURN_IF_ERROR(activate());
    LA_RETURN_IF_ERROR(check_attention(p));
    if (p.max_queries_per_seq > 1) return invalid_argument("attention_decode: a sequence has several query rows");
    const int splits = decode_num_splits(p, num_sms_);
    LA_RETURN_IF_ERROR(ensure_workspace(decode_workspace_floats(p, splits)));
    return launch_attention_decode(p, splits, workspace_, workspace_floats_, stream_);
}

Status CudaBackend::attention_prefill(const CudaAttentionParams& p) {
    LA_RETURN_IF_ERROR(activate());
    LA_RETURN_IF_ERROR(check_attention(p));
    return launch_attention_prefill(p, stream_);
}

Status CudaBackend::rope_apply(const kernels::RopeApplyParams& p) {
    LA_RETURN_IF_ERROR(activate());
    if (p.num_rows < 0 || p.num_heads <= 0 || p.head_dim <= 0) return invalid_argument("rope_apply: bad shape");
    LA_RETURN_IF_ERROR(check_rope(p.rope, p.head_dim, "rope_apply"));
    return launch_rope_apply(p, stream_);
}

Status CudaBackend::kv_store(const KvStoreParams& p) {
    LA_RETURN_IF_ERROR(activate());
    if (p.num_rows < 0 || p.num_kv_heads <= 0 || p.head_dim <= 0 || p.block_size <= 0) {
        return invalid_argument("kv_store: bad shape");
    }
    if (p.rope_positions != nullptr) LA_RETURN_IF_ERROR(check_rope(p.rope, p.head_dim, "kv_store"));
    return launch_kv_store(p, stream_);
}

Status CudaBackend::kv_copy_rotate(const KvCopyRotateParams& p) {
    LA_RETURN_IF_ERROR(activate());
    if (p.num_tokens < 0 || p.num_layers < 0 || p.num_layers > 65535 || p.num_kv_heads <= 0 || p.head_dim <= 0 ||
        p.block_size <= 0) {
        return invalid_argument("kv_copy_rotate: bad shape");
    }
    if (p.delta != 0) LA_RETURN_IF_ERROR(check_rope(p.rope, p.head_dim, "kv_copy_rotate"));
    return launch_kv_copy_rotate(p, stream_);
}

Status CudaBackend::rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps) {
    LA_RETURN_IF_ERROR(activate());
    if (num_rows < 0 || dim <= 0) return invalid_argument("rmsnorm: bad shape");
    return launch_rmsnorm(x, weight, out, num_rows, dim, eps, stream_);
}

Status CudaBackend::rmsnorm(const float* x, const float* weight, __nv_bfloat16* out, int64_t num_rows, int64_t dim,
                            float eps) {
    LA_RETURN_IF_ERROR(activate());
    if (num_rows < 0 || dim <= 0) return invalid_argument("rmsnorm: bad shape");
    return launch_rmsnorm(x, weight, out, num_rows, dim, eps, stream_);
}

Status CudaBackend::swiglu(const float* gate, const float* up, float* out, int64_t n) {
    LA_RETURN_IF_ERROR(activate());
    if (n < 0) return invalid_argument("swiglu: bad size");
    return launch_swiglu(gate, up, out, n, stream_);
}

Status CudaBackend::swiglu(const float* gate, const float* up, __nv_bfloat16* out, int64_t n) {
    LA_RETURN_IF_ERROR(activate());
    if (n < 0) return invalid_argument("swiglu: bad size");
    return launch_swiglu(gate, up, out, n, stream_);
}

Status CudaBackend::embedding(const float* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                              int64_t vocab_size) {
    LA_RETURN_IF_ERROR(activate());
    if (num_rows < 0 || dim <= 0 || vocab_size <= 0) return invalid_argument("embedding: bad shape");
    return launch_embedding(table, ids, out, num_rows, dim, vocab_size, stream_);
}

Status CudaBackend::embedding(const __nv_bfloat16* table, const int32_t* ids, float* out, int64_t num_rows, int64_t dim,
                              int64_t vocab_size) {
    LA_RETURN_IF_ERROR(activate());
    if (num_rows < 0 || dim <= 0 || vocab_size <= 0) return invalid_argument("embedding: bad shape");
    return launch_embedding(table, ids, out, num_rows, dim, vocab_size, stream_);
}

Status CudaBackend::add_inplace(float* x, const float* y, int64_t n) {
    LA_RETURN_IF_ERROR(activate());
    if (n < 0) return invalid_argument("add_inplace: bad size");
    return launch_add_inplace(x, y, n, stream_);
}

Status CudaBackend::add_bias(float* y, const float* bias, int64_t num_rows, int64_t dim) {
    LA_RETURN_IF_ERROR(activate());
    if (num_rows < 0 || dim <= 0) return invalid_argument("add_bias: bad shape");
    return launch_add_bias(y, bias, num_rows, dim, stream_);
}

Status CudaBackend::to_bf16(const float* x, __nv_bfloat16* out, int64_t n) {
    LA_RETURN_IF_ERROR(activate());
    if (n < 0) return invalid_argument("to_bf16: bad size");
    return launch_to_bf16(x, out, n, stream_);
}

Status CudaBackend::sample(const SampleParams& p) {
    LA_RETURN_IF_ERROR(activate());
    if (p.num_rows < 0 || p.vocab_size <= 0 || p.row_stride < p.vocab_size)
        return invalid_argument("sample: bad shape");
    if (p.num_rows > 0 && p.temperature != nullptr && p.uniform == nullptr) {
        return invalid_argument("sample: temperature given without uniform draws");
    }
    return launch_sample(p, stream_);
}

Status CudaBackend::argmax(const float* logits, int64_t row_stride, int32_t num_rows, int32_t vocab_size,
                           int32_t* tokens) {
    LA_RETURN_IF_ERROR(activate());
    if (num_rows < 0 || vocab_size <= 0 || row_stride < vocab_size) return invalid_argument("argmax: bad shape");
    return launch_argmax(logits, row_stride, num_rows, vocab_size, tokens, stream_);
}

Status CudaBackend::apply_token_bitmask(float* logits, int64_t row_stride, int32_t num_rows, int32_t vocab_size,
                                        const int32_t* bitmask, int32_t bitmask_words) {
    LA_RETURN_IF_ERROR(activate());
    if (num_rows < 0 || vocab_size <= 0 || row_stride < vocab_size || bitmask_words < 0) {
        return invalid_argument("apply_token_bitmask: bad shape");
    }
    return launch_apply_token_bitmask(logits, row_stride, num_rows, vocab_size, bitmask, bitmask_words, stream_);
}

Status CudaBackend::gemm(const GemmParams& p) {
    LA_RETURN_IF_ERROR(activate());
    if (!gemm_) {  // cuBLASLt is loaded on first use
        LA_ASSIGN_OR_RETURN(gemm_, CublasGemm::create());
    }
    return gemm_->run(p, stream_);
}

}  // namespace lazyattn::backend::cuda
