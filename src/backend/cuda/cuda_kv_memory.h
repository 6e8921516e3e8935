// CudaKvMemory: the KV pool in device memory, one K and one V array per layer (cudaMalloc'ed),
// bf16 as the CUDA kernels read it.
#pragma once

#include <memory>
#include <vector>

#include "backend/kv_memory.h"
#include "core/status.h"

namespace lazyattn::backend::cuda {

class CudaKvMemory final : public backend::KvMemory {
public:
    // The pool on the current device; kInvalidArgument for a dtype the kernels do not read,
    // kResourceExhausted naming the size when the device cannot hold it.
    static Expected<std::unique_ptr<CudaKvMemory>> allocate(const kv::KvShape& shape);
    ~CudaKvMemory() override;

    void* k(int32_t layer) override { return k_[layer]; }
    void* v(int32_t layer) override { return v_[layer]; }
    using KvMemory::k;
    using KvMemory::v;
    Status read_block(int32_t block, void* host) const override;
    Status write_block(int32_t block, const void* host) override;

private:
    explicit CudaKvMemory(const kv::KvShape& shape) : KvMemory(shape) {}
    std::vector<void*> k_, v_;
};

}  // namespace lazyattn::backend::cuda
