#include "backend/cuda/cuda_kv_memory.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace lazyattn::backend::cuda {

Expected<std::unique_ptr<CudaKvMemory>> CudaKvMemory::allocate(const kv::KvShape& shape) {
    if (shape.k_dtype != kernels::KvDtype::kBF16 || shape.v_dtype != kernels::KvDtype::kBF16) {
        return invalid_argument(std::string("KV type ") + kernels::kv_types_name(shape.types()) +
                                " cannot be read on the CUDA device: its attention kernels read bf16 keys and values "
                                "(--kv-dtype bf16, the default there)");
    }
    // Asked first, so an impossible pool is refused with the device's numbers (as the host
    // backend refuses one larger than the machine) instead of by whichever layer's cudaMalloc fails.
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess &&
        shape.bytes_per_block() * shape.num_blocks > int64_t(free_bytes)) {
        return resource_exhausted(backend::kv_pool_needs(shape) + " but the device has " +
                                  backend::mib(int64_t(free_bytes)) + " free of " + backend::mib(int64_t(total_bytes)) +
                                  " (lower --kv-cache-mb)");
    }
    cudaGetLastError();
    std::unique_ptr<CudaKvMemory> m(new CudaKvMemory(shape));
    const size_t bytes = size_t(shape.num_blocks) * size_t(shape.k_bytes_per_block());  // bf16: K and V alike
    for (int32_t l = 0; l < shape.num_layers; ++l) {
        for (std::vector<void*>* arrays : {&m->k_, &m->v_}) {
            void* p = nullptr;
            if (cudaMalloc(&p, bytes) != cudaSuccess) {  // what was allocated is freed with m
                cudaGetLastError();
                return resource_exhausted(backend::kv_pool_needs(shape) +
                                          ", which the device could not allocate (lower "
                                          "--kv-cache-mb)");
            }
            arrays->push_back(p);
        }
    }
    return m;
}

CudaKvMemory::~CudaKvMemory() {
    for (void* p : k_) cudaFree(p);
    for (void* p : v_) cudaFree(p);
}

// A failed copy means the device is in trouble (lost, or out of memory for staging): the error
// goes back to the store, which recomputes the segment instead of trusting the block.
static Status copy_status(cudaError_t e, const char* what, int32_t block) {
    if (e == cudaSuccess) return {};
    return internal_error(std::string(what) + " of block " + std::to_string(block) +
                          " failed: " + cudaGetErrorString(e));
}

Status CudaKvMemory::read_block(int32_t block, void* host) const {
    const size_t n = size_t(shape_.k_bytes_per_block());  // bf16 K and V: the same size
    auto* out = static_cast<char*>(host);
    for (int32_t l = 0; l < shape_.num_layers; ++l) {
        LA_RETURN_IF_ERROR(
            copy_status(cudaMemcpy(out, static_cast<const char*>(k_[l]) + size_t(block) * n, n, cudaMemcpyDeviceToHost),
                        "KV read", block));
        LA_RETURN_IF_ERROR(copy_status(
            cudaMemcpy(out + n, static_cast<const char*>(v_[l]) + size_t(block) * n, n, cudaMemcpyDeviceToHost),
            "KV read", block));
        out += 2 * n;
    }
    return {};
}

Status CudaKvMemory::write_block(int32_t block, const void* host) {
    const size_t n = size_t(shape_.k_bytes_per_block());  // bf16 K and V: the same size
    const auto* in = static_cast<const char*>(host);
    for (int32_t l = 0; l < shape_.num_layers; ++l) {
        LA_RETURN_IF_ERROR(
            copy_status(cudaMemcpy(static_cast<char*>(k_[l]) + size_t(block) * n, in, n, cudaMemcpyHostToDevice),
                        "KV write", block));
        LA_RETURN_IF_ERROR(
            copy_status(cudaMemcpy(static_cast<char*>(v_[l]) + size_t(block) * n, in + n, n, cudaMemcpyHostToDevice),
                        "KV write", block));
        in += 2 * n;
    }
    return {};
}

}  // namespace lazyattn::backend::cuda
