// Device: where the engine computes, chosen at startup (--device cpu|cuda), and the one factory
// that turns the choice into a Backend. A backend for a new device plugs in here.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"

namespace lazyattn::backend {

enum class Device { kCpu, kCuda };

const char* device_name(Device d);  // "cpu" | "cuda"
// "cpu" | "cuda"; anything else is kInvalidArgument naming the choices.
Expected<Device> parse_device(const std::string& name);

// How a program that links a CUDA backend makes it (backend/cuda: make_cuda_engine_backend);
// installed by the program at startup, so that only programs built for CUDA link its runtime.
using CudaBackendFactory = Expected<std::unique_ptr<Backend>> (*)(int num_threads);
void set_cuda_backend_factory(CudaBackendFactory factory);

// The backend for `device` with `num_threads` host threads (0 = all). CUDA is refused with
// kUnavailable and a message saying why: not built into this binary, or no usable device.
Expected<std::unique_ptr<Backend>> make_backend(Device device, int num_threads);

}  // namespace lazyattn::backend
