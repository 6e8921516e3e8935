// Two backends on two devices in one process: each device needs its own shared-memory opt-in
// for the attention kernels (the attribute is per device), and each backend's ops run on its own
// device even after the other backend made its device current. Skipped (with the reason) on a
// host with one GPU; the emulator has two devices.
#include <random>

#include "attention_test_batch.h"

namespace lazyattn::cuda_test {
namespace {

// More than the device holds fails at once with cudaErrorMemoryAllocation (what CudaKvMemory turns
// into a clear refusal), on the hardware and in the emulator alike; it never "succeeds" lazily.
TEST_F(CudaTest, AnAllocationPastTheDevicesMemoryFailsAtOnce) {
    size_t free_before = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
    ASSERT_GT(total, size_t(0));
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, total + (size_t(1) << 30)), cudaErrorMemoryAllocation);
    cudaGetLastError();
    // What is allocated is no longer free (exactly so in the emulator; a real device rounds).
    ASSERT_EQ(cudaMalloc(&p, size_t(64) << 20), cudaSuccess);
    size_t free_during = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_during, &total), cudaSuccess);
    EXPECT_LE(free_during + (size_t(64) << 20), free_before);
    ASSERT_EQ(cudaFree(p), cudaSuccess);
    if (is_emulated()) {
        size_t free_after = 0;
        ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
        EXPECT_EQ(free_after, free_before);
    }
}

TEST_F(CudaTest, AttentionRunsOnASecondDevice) {
    int count = 0;
    ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
    if (count < 2) GTEST_SKIP() << "needs two CUDA devices, found " << count;
    std::mt19937_64 rng(testing::test_seed() + 51);
    // Head dim 128, GQA 4: the decode and prefill kernels both need more than 48 KiB.
    const HostBatch b = make_batch({8, 2, 128}, {}, {{{40}, 20, 12}}, rng);
    const HostBatch b1 = make_batch({8, 2, 128}, {}, {{{17}, 9, 1}}, rng);
    const std::vector<float> want = reference_output(b, true), want1 = reference_output(b1, true);
    // The shared backend (device 0) launches first, so the opt-in of device 0 is done.
    {
        DeviceBatch d(b), d1(b1);
        LA_ASSERT_OK(backend().attention_prefill(device_params(b, d, true)));
        LA_ASSERT_OK(backend().attention_decode(device_params(b1, d1, true)));
        LA_ASSERT_OK(backend().synchronize());
        expect_all_close(d.out.download(), want, 6e-3, 2e-2, "prefill on device 0");
        expect_all_close(d1.out.download(), want1, 5e-5, 5e-4, "decode on device 0");
    }
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
    {
        auto second = CudaBackend::create(1);
        LA_ASSERT_OK(second.status());
        DeviceBatch d(b), d1(b1);  // device 1 memory
        LA_ASSERT_OK(second.value()->attention_prefill(device_params(b, d, true)));
        LA_ASSERT_OK(second.value()->attention_decode(device_params(b1, d1, true)));
        LA_ASSERT_OK(second.value()->synchronize());
        expect_all_close(d.out.download(), want, 6e-3, 2e-2, "prefill on device 1");
        expect_all_close(d1.out.download(), want1, 5e-5, 5e-4, "decode on device 1");
        LA_ASSERT_OK(second.value()->synchronize());
    }
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace
}  // namespace lazyattn::cuda_test
