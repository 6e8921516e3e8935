// A CPU emulator for the CUDA subset the lazyattn kernels use, so the very kernel sources run (and
// are tested against the scalar references) on machines without a GPU. Built only into the
// emulated test target (LA_CUDA_EMULATE); the real build never includes this file.
//
// Model: a launch runs its blocks one after another; the threads of a block are cooperative
// fibers on one OS thread that switch only at barriers (__syncthreads, warp collectives). The
// scheduler resumes runnable fibers in a random order each round, so a missing barrier shows up
// as a wrong result. Warp collectives (shuffles, ldmatrix, mma.sync) exchange values through
// per-warp slots and require every lane of the warp (full mask), as the kernels promise.
// cp.async copies land at a random barrier between their issue and the wait that retires their
// group, so reading a stage before waiting for it, or refilling a stage other warps still read,
// gives wrong results.
// Device memory is host memory whose end touches a guard page; fresh allocations and shared
// memory are filled with NaN bytes, except allocations of kSparseAllocationBytes or more, which
// are reserved lazily and read as zero (only the pages a test touches take memory, so KV pools
// past 2^31 elements fit), up to kDeviceMemoryBytes in all. The runtime API functions the code
// calls (cudaMalloc, ...) are defined by the emulator against the real declarations of
// cuda_runtime_api.h.
// There are kNumDevices devices; cudaSetDevice selects one per process, and the shared-memory
// opt-in (cudaFuncSetAttribute) holds for the current device only, as on a real multi-GPU host.
// __sincosf returns sincosf plus an error of up to its documented bound (kSincosfMaxAbsError), so
// tests must allow what the hardware intrinsic may do. Float atomics are counted
// (float_atomic_adds): their order, hence their sum, is not deterministic on a GPU.
#pragma once

#include <cuda_runtime_api.h>
#include <math.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

namespace lazyattn::emu {

constexpr int kNumDevices = 2;
constexpr size_t kSparseAllocationBytes = size_t(1) << 30;
// An H200's memory (141 GiB, mostly never touched: see above), one budget for the process's
// allocations on every emulated device: cudaMalloc past it fails and cudaMemGetInfo reports what
// is left, as on the hardware.
constexpr size_t kDeviceMemoryBytes = size_t(141) << 30;
// CUDA C Programming Guide, intrinsic functions: __sinf/__cosf (and so __sincosf) have a maximum
// absolute error of 2^-21.41 for x in [-pi, pi].
constexpr float kSincosfMaxAbsError = 3.5927e-07f;  // 2^-21.41

// The number of atomicAdd calls on float or double operands so far (the process's total).
uint64_t float_atomic_adds();
void count_float_atomic_add();

// Thread, block and launch geometry of the running fiber.
const uint3& thread_idx();
const uint3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
int lane_id();

void sync_threads();
void sync_warp();
unsigned char* dynamic_smem();

// Raw 8-byte exchange: every lane deposits `value`, then reads lane `src`'s deposit.
uint64_t warp_exchange(uint64_t value, int src_lane);

template <typename T>
T shfl_idx(unsigned mask, T v, int src, int width) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    if (mask != 0xffffffffu) __builtin_trap();
    const int lane = lane_id();
    const int base = lane & ~(width - 1);
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    bits = warp_exchange(bits, base + (src & (width - 1)));
    T r;
    std::memcpy(&r, &bits, sizeof(T));
    return r;
}

template <typename T>
T shfl_xor(unsigned mask, T v, int lane_mask, int width) {
    const int lane = lane_id();
    int src = lane ^ lane_mask;
    if ((src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;
    return shfl_idx(mask, v, src & (width - 1), width);
}

// Warp-collective matrix ops with the PTX ISA fragment layouts.
void ldmatrix_x4(uint32_t* r, const void* smem_row, bool trans);
void mma_m16n8k16_bf16(float* d, const uint32_t* a, const uint32_t* b);

// cp.async: copy 16 bytes, zero-filling the bytes past src_bytes; deferred until its group retires.
void cp_async_16(void* dst, const void* src, int src_bytes);
void cp_async_commit();
void cp_async_wait(int max_pending_groups);

// Runs `body` as every thread of every block of the grid.
void launch(dim3 grid, dim3 block, size_t smem_bytes, const void* kernel, const std::function<void()>& body);

// True when `kernel` may use `smem_bytes` of dynamic shared memory (48 KiB, or what
// cudaFuncSetAttribute allowed).
bool smem_allowed(const void* kernel, size_t smem_bytes);

}  // namespace lazyattn::emu

// ---- The CUDA C++ names the kernels use --------------------------------------------------------
#define threadIdx (::lazyattn::emu::thread_idx())
#define blockIdx (::lazyattn::emu::block_idx())
#define blockDim (::lazyattn::emu::block_dim())
#define gridDim (::lazyattn::emu::grid_dim())
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

inline void __syncthreads() { ::lazyattn::emu::sync_threads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    if (mask != 0xffffffffu) __builtin_trap();
    ::lazyattn::emu::sync_warp();
}
template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    return ::lazyattn::emu::shfl_idx(mask, v, src, width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    return ::lazyattn::emu::shfl_xor(mask, v, lane_mask, width);
}
// Fibers never preempt one another, so plain read-modify-write is atomic here.
template <typename T>
T atomicAdd(T* address, T v) {
    if constexpr (std::is_floating_point_v<T>) ::lazyattn::emu::count_float_atomic_add();
    const T old = *address;
    *address = old + v;
    return old;
}
template <typename T>
T atomicMax(T* address, T v) {
    const T old = *address;
    if (v > old) *address = v;
    return old;
}
template <typename T>
T atomicMin(T* address, T v) {
    const T old = *address;
    if (v < old) *address = v;
    return old;
}
inline unsigned __float_as_uint(float x) {
    unsigned u;
    std::memcpy(&u, &x, 4);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}
// sincosf plus a deterministic pseudo-random error of up to the intrinsic's documented bound.
inline void __sincosf(float x, float* s, float* c) {
    sincosf(x, s, c);
    uint32_t h = __float_as_uint(x) * 0x9e3779b1u;
    h ^= h >> 15;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    const float es = (float(h & 0xffffu) / 65535.0f * 2.0f - 1.0f) * ::lazyattn::emu::kSincosfMaxAbsError;
    const float ec = (float(h >> 16) / 65535.0f * 2.0f - 1.0f) * ::lazyattn::emu::kSincosfMaxAbsError;
    *s += es;
    *c += ec;
}
template <typename T>
T __ldg(const T* p) {
    return *p;
}
// CUDA's global min/max overloads.
#define LA_EMU_MINMAX(T)                             \
    inline T min(T a, T b) { return b < a ? b : a; } \
    inline T max(T a, T b) { return a < b ? b : a; }
LA_EMU_MINMAX(int)
LA_EMU_MINMAX(unsigned)
LA_EMU_MINMAX(long long)
LA_EMU_MINMAX(unsigned long long)
#undef LA_EMU_MINMAX
