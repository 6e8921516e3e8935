// The device rule of every GPU test: where no CUDA device is usable the test skips with the
// reason, or fails when LAZYATTN_REQUIRE_GPU is set (to anything but "" or "0"; scripts/
// gpu_check.sh sets 1), so a broken driver cannot pass as green. The emulator always has a device.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.h"

namespace lazyattn::cuda_test {

inline bool gpu_required(const char* env_value) {
    return env_value != nullptr && *env_value != '\0' && std::strcmp(env_value, "0") != 0;
}
inline bool gpu_required() { return gpu_required(std::getenv("LAZYATTN_REQUIRE_GPU")); }

}  // namespace lazyattn::cuda_test

// In a test body or SetUp (it returns from the enclosing void function).
#define LA_SKIP_WITHOUT_CUDA_DEVICE()                                                    \
    do {                                                                                 \
        std::string la_why_;                                                             \
        if (!::lazyattn::backend::cuda::cuda_device_available(&la_why_)) {               \
            if (::lazyattn::cuda_test::gpu_required()) {                                 \
                FAIL() << "no CUDA device and LAZYATTN_REQUIRE_GPU is set: " << la_why_; \
            }                                                                            \
            GTEST_SKIP() << "no CUDA device, skipping GPU test: " << la_why_;            \
        }                                                                                \
    } while (0)
