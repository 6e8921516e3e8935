#include "backend/device.h"

namespace lazyattn::backend {

const char* device_name(Device d) { return d == Device::kCuda ? "cuda" : "cpu"; }

Expected<Device> parse_device(const std::string& name) {
    if (name == "cpu") return Device::kCpu;
    if (name == "cuda") return Device::kCuda;
    return invalid_argument("unknown device '" + name + "' (cpu or cuda)");
}

Expected<std::unique_ptr<Backend>> make_backend(Device device, int num_threads) {
    switch (device) {
        case Device::kCpu:
            return make_cpu_backend(num_threads);
        case Device::kCuda:
#ifdef LAZYATTN_CUDA_BUILT
            // The CUDA kernels are built and tested (tests/cuda), but CudaBackend does not
            // implement this interface yet: the seam is here.
            return unavailable(
                "--device cuda: the CUDA backend of this build does not run the engine yet (its kernels are "
                "tested on their own); use --device cpu");
#else
            return unavailable(
                "--device cuda: this lazyattn was built without CUDA (configure with -DLAZYATTN_CUDA=ON where the "
                "CUDA toolkit is installed); use --device cpu");
#endif
    }
    return invalid_argument("unknown device");
}

}  // namespace lazyattn::backend
