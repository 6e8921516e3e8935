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

// The backend for `device` with `num_threads` host threads (0 = all). CUDA is refused with
// kUnavailable and a message saying why: not built into this binary, or (built) the CUDA backend
// does not run the engine yet.
Expected<std::unique_ptr<Backend>> make_backend(Device device, int num_threads);

}  // namespace lazyattn::backend
