#include "backend/device.h"

namespace lazyattn::backend {

const char* device_name(Device d) { return d == Device::kCuda ? "cuda" : "cpu"; }

Expected<Device> parse_device(const std::string& name) {
    if (name == "cpu") return Device::kCpu;
    if (name == "cuda") return Device::kCuda;
    return invalid_argument("unknown device '" + name + "' (cpu or cuda)");
}

namespace {
CudaBackendFactory cuda_factory = nullptr;
}  // namespace

void set_cuda_backend_factory(CudaBackendFactory factory) { cuda_factory = factory; }

Expected<std::unique_ptr<Backend>> make_backend(Device device, int num_threads) {
    switch (device) {
        case Device::kCpu:
            return make_cpu_backend(num_threads);
        case Device::kCuda:
            if (cuda_factory != nullptr) return cuda_factory(num_threads);
#ifdef LAZYATTN_CUDA_BUILT
            return unavailable(
                "--device cuda: this program does not link the CUDA backend of this build (lazyattn does); use "
                "--device cpu");
#else
            return unavailable(
                "--device cuda: this lazyattn was built without CUDA (configure with -DLAZYATTN_CUDA=ON where the "
                "CUDA toolkit is installed); use --device cpu");
#endif
    }
    return invalid_argument("unknown device");
}

}  // namespace lazyattn::backend
