// The opt-in to more than 48 KiB of dynamic shared memory (cudaFuncSetAttribute
// MaxDynamicSharedMemorySize) is a property of a kernel on one device: a process that launches
// the kernel on a second GPU must opt in there too. SmemOptIn remembers, per device, that the
// call was made, so each launch pays one cudaGetDevice and an atomic load.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <string>

#include "backend/cuda/cuda_check.h"

namespace lazyattn::backend::cuda {

class SmemOptIn {
public:
    static constexpr int kMaxDevices = 64;

    // Makes `bytes` of dynamic shared memory available to `kernel` on the current device.
    Status ensure(const void* kernel, int bytes, const char* kernel_name) {
        int device = 0;
        LA_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
        if (device < 0 || device >= kMaxDevices) {
            return unsupported("CUDA device " + std::to_string(device) + " is past the " + std::to_string(kMaxDevices) +
                               " this build supports");
        }
        if (done_[device].load(std::memory_order_acquire)) return {};
        // Two threads may both get here: the attribute call is idempotent.
        LA_RETURN_IF_ERROR(cuda_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
                                       (std::string("cudaFuncSetAttribute(") + kernel_name + ")").c_str()));
        done_[device].store(true, std::memory_order_release);
        return {};
    }

private:
    std::array<std::atomic<bool>, kMaxDevices> done_{};
};

}  // namespace lazyattn::backend::cuda
