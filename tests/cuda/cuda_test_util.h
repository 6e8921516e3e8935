// Shared helpers of the CUDA tests: the fixture that skips without a device, device buffers,
// host bf16 rounding, the element-wise tolerance check, and the scalar references run in
// parallel. The same sources build test_cuda (real GPU) and test_cuda_emulated (CPU emulator).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.h"
#include "core/check.h"
#include "kernels/params/attention_params.h"
#include "kernels/ref/reference_ops.h"
#include "random_inputs.h"
#include "require_cuda_device.h"

namespace lazyattn::cuda_test {

using backend::cuda::CudaBackend;
using bf16 = __nv_bfloat16;

constexpr bool is_emulated() {
#ifdef LA_CUDA_EMULATE
    return true;
#else
    return false;
#endif
}

// Every CUDA test derives from this: SetUp skips with the reason when no device is usable (fails
// under LAZYATTN_REQUIRE_GPU).
class CudaTest : public ::testing::Test {
protected:
    void SetUp() override {
        LA_SKIP_WITHOUT_CUDA_DEVICE();
        // One backend for the whole run, never destroyed (no CUDA calls during static teardown).
        static CudaBackend* shared = [] {
            auto b = CudaBackend::create(0);
            LA_CHECK_MSG(b.ok(), "%s", b.status().to_string().c_str());
            return std::move(b).value().release();
        }();
        backend_ = shared;
    }
    CudaBackend& backend() { return *backend_; }

private:
    CudaBackend* backend_ = nullptr;
};

#define LA_ASSERT_OK(expr)                              \
    do {                                                \
        const ::lazyattn::Status la_st_ = (expr);       \
        ASSERT_TRUE(la_st_.ok()) << la_st_.to_string(); \
    } while (0)

// Owned device memory of n elements of T.
template <typename T>
class DeviceBuffer {
public:
    explicit DeviceBuffer(size_t n) : n_(n) {
        void* p = nullptr;
        const cudaError_t e = cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T));
        LA_CHECK_MSG(e == cudaSuccess, "cudaMalloc(%zu): %s", n * sizeof(T), cudaGetErrorString(e));
        ptr_ = static_cast<T*>(p);
    }
    explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
    ~DeviceBuffer() { cudaFree(ptr_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    T* get() const { return ptr_; }
    size_t size() const { return n_; }
    void upload(const std::vector<T>& host) {
        LA_CHECK(host.size() == n_);
        // cudaMemcpy from pageable memory may return before the copy lands: wait for it.
        cudaError_t e = cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        LA_CHECK_MSG(e == cudaSuccess, "upload: %s", cudaGetErrorString(e));
    }
    std::vector<T> download() const {
        std::vector<T> host(n_);
        cudaError_t e = cudaDeviceSynchronize();  // every stream's work on this buffer is done
        if (e == cudaSuccess) e = cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
        LA_CHECK_MSG(e == cudaSuccess, "download: %s", cudaGetErrorString(e));
        return host;
    }

private:
    T* ptr_ = nullptr;
    size_t n_ = 0;
};

inline bf16 to_bf16(float x) { return __float2bfloat16_rn(x); }
inline float from_bf16(bf16 x) { return __bfloat162float(x); }
inline bf16 bf16_from_bits(uint16_t u) {
    __nv_bfloat16_raw raw;
    raw.x = u;
    return bf16(raw);
}
inline bf16 bf16_nan() { return bf16_from_bits(0x7fc0); }

inline std::vector<bf16> to_bf16(const std::vector<float>& v) {
    std::vector<bf16> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = to_bf16(v[i]);
    return out;
}
inline std::vector<float> from_bf16(const std::vector<bf16>& v) {
    std::vector<float> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = from_bf16(v[i]);
    return out;
}
// Values rounded to bf16 and back: the inputs a bf16 kernel really sees.
inline std::vector<float> bf16_rounded(std::vector<float> v) {
    for (float& x : v) x = from_bf16(to_bf16(x));
    return v;
}

// Every element: |got - want| <= atol + rtol * |want|, no NaN; reports the worst element.
inline void expect_all_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                             const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    double worst = -1.0, worst_ratio = 0.0;
    size_t worst_i = 0, bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_FALSE(std::isnan(got[i])) << what << ": NaN at element " << i;
        const double err = std::abs(double(got[i]) - double(want[i]));
        const double allowed = atol + rtol * std::abs(double(want[i]));
        if (err > allowed) ++bad;
        if (allowed > 0.0) worst_ratio = std::max(worst_ratio, err / allowed);
        if (err - allowed > worst) {
            worst = err - allowed;
            worst_i = i;
        }
    }
    if (worst_ratio > 0.5 && bad == 0) {  // passing, but with a thin margin: worth knowing
        std::printf("[tolerance] %s: worst error at %.0f%% of the allowance\n", what.c_str(), 100.0 * worst_ratio);
    }
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements outside |err| <= " << atol << " + "
                       << rtol << "*|want|; worst element " << worst_i << " got " << got[worst_i] << " want "
                       << want[worst_i];
}

// The absolute error of one RoPE rotation on the device against the double reference, for inputs
// (the element and its partner) of magnitude at most max_abs: per unit of |x| + |partner|,
// __sincosf's documented bound (2^-21.41 on [-pi, pi]; the emulator adds an error of that size)
// plus the angle's rounding to float after the double-precision reduction (at most pi * 2^-24),
// then fp32 rounding of the products and their sum (2 ulps), with a 1.5x margin.
constexpr double kSincosfMaxAbsError = 3.5927e-7;      // 2^-21.41
constexpr double kRopeAngleRoundingError = 1.8725e-7;  // pi * 2^-24
inline double rope_atol(double max_abs) {
    return 1.5 * (2.0 * max_abs * (kSincosfMaxAbsError + kRopeAngleRoundingError) + 4.0 * max_abs * 0x1p-24);
}

// inv_freq of standard RoPE (base 10000) for `rotary_dims`.
inline std::vector<float> rope_inv_freq(int rotary_dims, double base = 10000.0) {
    std::vector<float> f(rotary_dims / 2);
    for (int i = 0; i < rotary_dims / 2; ++i) f[i] = float(std::pow(base, -2.0 * i / rotary_dims));
    return f;
}

// The optional cos/sin table, [positions, rotary_dims / 2, 2], computed in double.
inline std::vector<float> rope_table(const std::vector<float>& inv_freq, float position_scale, int positions) {
    std::vector<float> t(size_t(positions) * inv_freq.size() * 2);
    for (int p = 0; p < positions; ++p) {
        for (size_t i = 0; i < inv_freq.size(); ++i) {
            const double a = double(p) * position_scale * double(inv_freq[i]);
            t[(size_t(p) * inv_freq.size() + i) * 2] = float(std::cos(a));
            t[(size_t(p) * inv_freq.size() + i) * 2 + 1] = float(std::sin(a));
        }
    }
    return t;
}

// kernels::ref::attention with the query rows spread over all hardware threads (rows are
// independent: each chunk is one sequence's slice of rows with the same spans).
inline void reference_attention(const kernels::AttentionParams& p) {
    std::vector<kernels::AttentionSeq> chunks;
    for (int32_t s = 0; s < p.num_seqs; ++s) {
        const kernels::AttentionSeq& seq = p.seqs[s];
        for (int32_t r = 0; r < seq.num_queries; r += 4) {
            chunks.push_back({seq.query_start + r, std::min(4, seq.num_queries - r), seq.span_begin, seq.span_end});
        }
    }
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < chunks.size(); i = next++) {
            kernels::AttentionParams c = p;
            c.seqs = &chunks[i];
            c.num_seqs = 1;
            kernels::ref::attention(c);
        }
    };
    const unsigned n = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 32));
    std::vector<std::thread> threads;
    for (unsigned t = 0; t + 1 < n; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
}

}  // namespace lazyattn::cuda_test
