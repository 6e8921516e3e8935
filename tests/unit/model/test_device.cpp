// Device choice: names parse, the CPU backend is made, CUDA is refused with its reason before a
// model is loaded (this test runs in builds and on machines without a GPU).
#include <gtest/gtest.h>

#include "backend/device.h"
#include "engine/loading/loaded_model.h"

namespace lazyattn {
namespace {

TEST(Device, NamesParseAndUnknownOnesAreRefused) {
    EXPECT_EQ(*backend::parse_device("cpu"), backend::Device::kCpu);
    EXPECT_EQ(*backend::parse_device("cuda"), backend::Device::kCuda);
    auto bad = backend::parse_device("tpu");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_STREQ(backend::device_name(backend::Device::kCuda), "cuda");
}

TEST(Device, CpuMakesTheCpuBackend) {
    auto be = backend::make_backend(backend::Device::kCpu, 1);
    ASSERT_TRUE(be.ok()) << be.status().to_string();
    EXPECT_EQ((*be)->name(), "cpu");
    EXPECT_EQ((*be)->num_threads(), 1);
}

TEST(Device, CudaIsRefusedWithTheReasonBeforeAnyModelIsRead) {
    auto be = backend::make_backend(backend::Device::kCuda, 1);
    ASSERT_FALSE(be.ok());
    EXPECT_EQ(be.status().code(), StatusCode::kUnavailable);
    const std::string& m = be.status().message();
    EXPECT_NE(m.find("--device cuda"), std::string::npos) << m;
#ifndef LAZYATTN_CUDA_TEST_BUILD
    EXPECT_NE(m.find("built without CUDA"), std::string::npos) << m;
#endif
    // A model path that does not exist: refused for the device, not for the file.
    auto lm = engine::load_model("/nonexistent/model.gguf", backend::Device::kCuda, 1);
    ASSERT_FALSE(lm.ok());
    EXPECT_EQ(lm.status().code(), StatusCode::kUnavailable) << lm.status().to_string();
}

}  // namespace
}  // namespace lazyattn
