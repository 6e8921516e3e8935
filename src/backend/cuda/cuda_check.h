// Error handling of CUDA runtime calls: every call is checked and a failure becomes a Status
// naming the call (launch errors are read with cudaGetLastError right after the launch).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/status.h"

namespace lazyattn::backend::cuda {

inline Status cuda_status(cudaError_t error, const char* what) {
    if (error == cudaSuccess) return {};
    return internal_error(std::string(what) + ": " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

}  // namespace lazyattn::backend::cuda

// Returns an internal-error Status from the enclosing function when the CUDA call fails.
#define LA_CUDA_RETURN_IF_ERROR(call) LA_RETURN_IF_ERROR(::lazyattn::backend::cuda::cuda_status((call), #call))

// After a kernel launch: reports a bad launch configuration (and earlier asynchronous errors).
#define LA_CUDA_RETURN_IF_LAUNCH_FAILED(kernel_name) \
    LA_RETURN_IF_ERROR(::lazyattn::backend::cuda::cuda_status(cudaGetLastError(), "launch of " kernel_name))
