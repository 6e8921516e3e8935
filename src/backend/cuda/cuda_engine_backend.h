// CudaEngineBackend: backend::Backend on a CUDA device, so the engine's model runs on the GPU.
// Weights are dequantized at load to bf16 in device memory and multiplied with cuBLASLt (the fp32
// activation rounded to bf16, fp32 out); the KV pool is bf16 in device memory (CudaKvMemory);
// every other op is a CudaBackend kernel on one stream. Ops return nothing (the interface's
// contract): the first failure is kept and reported by status(), which the model checks each step.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "core/status.h"

namespace lazyattn::backend::cuda {

// The engine's CUDA backend on device 0, or kUnavailable saying why no device can be used
// (backend::set_cuda_backend_factory takes this function; host threads are not used).
Expected<std::unique_ptr<backend::Backend>> make_cuda_engine_backend(int num_threads);

}  // namespace lazyattn::backend::cuda
