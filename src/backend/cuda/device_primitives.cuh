// Device building blocks shared by the kernels: bf16 packing, warp reductions, and thin wrappers
// over the PTX the kernels use (cp.async, ldmatrix, mma.sync m16n8k16 bf16). Every kernel reaches
// hardware-specific instructions only through this file, so that with LA_CUDA_EMULATE the same
// kernel sources compile as C++ and run on the CPU emulator (tests/support/cuda_emulator).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#ifdef LA_CUDA_EMULATE
#include "support/cuda_emulator/cuda_emulator.h"
#define LA_SHARED static
#define LA_DYNAMIC_SMEM(name) unsigned char* name = ::lazyattn::emu::dynamic_smem()
// Launches `kernel` (a function pointer, not a template-id with commas) on the emulator.
#define LA_LAUNCH_KERNEL(kernel, grid, block, smem, stream, ...) \
    ::lazyattn::emu::launch(grid, block, smem, reinterpret_cast<const void*>(kernel), [=] { kernel(__VA_ARGS__); })
#else
#include <cuda_runtime.h>
#define LA_SHARED __shared__
#define LA_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#define LA_LAUNCH_KERNEL(kernel, grid, block, smem, stream, ...) kernel<<<grid, block, smem, stream>>>(__VA_ARGS__)
#endif

namespace lazyattn::backend::cuda {

using bf16 = __nv_bfloat16;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;

// ---- bf16 <-> fp32 -----------------------------------------------------------------------------

__device__ __forceinline__ float bf16_lo(uint32_t packed) { return __uint_as_float(packed << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t packed) { return __uint_as_float(packed & 0xffff0000u); }

// Two floats to one register of two bf16 (round to nearest even), `lo` in the low half.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    uint32_t u;
    static_assert(sizeof(h) == sizeof(u));
    __builtin_memcpy(&u, &h, sizeof(u));
    return u;
}

// Eight bf16 (one 16-byte vector) to eight floats.
__device__ __forceinline__ void unpack_bf16x8(const uint4& v, float* out) {
    out[0] = bf16_lo(v.x);
    out[1] = bf16_hi(v.x);
    out[2] = bf16_lo(v.y);
    out[3] = bf16_hi(v.y);
    out[4] = bf16_lo(v.z);
    out[5] = bf16_hi(v.z);
    out[6] = bf16_lo(v.w);
    out[7] = bf16_hi(v.w);
}

__device__ __forceinline__ float bf16_to_float(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ bf16 float_to_bf16(float x) { return __float2bfloat16_rn(x); }

// Output conversions for kernels templated on their output type.
__device__ __forceinline__ void store_as(float* p, float x) { *p = x; }
__device__ __forceinline__ void store_as(bf16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ float load_as_float(const float* p) { return *p; }
__device__ __forceinline__ float load_as_float(const bf16* p) { return __bfloat162float(*p); }

// ---- Warp reductions (every lane of the warp must call them) -------------------------------------

__device__ __forceinline__ float warp_sum(float x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(kFullMask, x, o);
    return x;
}

// ---- cp.async -----------------------------------------------------------------------------------

// Copies 16 bytes global -> shared, bypassing L1; bytes past `src_bytes` (0 or 16) are zero-filled,
// and with src_bytes == 0 nothing is read.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, int src_bytes) {
#ifdef LA_CUDA_EMULATE
    ::lazyattn::emu::cp_async_16(smem_dst, gmem_src, src_bytes);
#else
    const auto dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes));
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#ifdef LA_CUDA_EMULATE
    ::lazyattn::emu::cp_async_commit();
#else
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef LA_CUDA_EMULATE
    ::lazyattn::emu::cp_async_wait(N);
#else
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// ---- ldmatrix and mma.sync ----------------------------------------------------------------------

// Four 8x8 b16 matrices; lane l gives the address of row l%8 of matrix l/8. Without trans lane l
// receives (row l/4, cols 2(l%4), 2(l%4)+1) of each matrix; with trans (rows 2(l%4), 2(l%4)+1, col l/4).
__device__ __forceinline__ void ldmatrix_x4(uint32_t* r, const void* smem_row) {
#ifdef LA_CUDA_EMULATE
    ::lazyattn::emu::ldmatrix_x4(r, smem_row, false);
#else
    const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#endif
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t* r, const void* smem_row) {
#ifdef LA_CUDA_EMULATE
    ::lazyattn::emu::ldmatrix_x4(r, smem_row, true);
#else
    const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#endif
}

// d += a * b with A 16x16 (row), B 16x8 (col), bf16 inputs and fp32 accumulators. Fragments
// (g = lane/4, t = lane%4): a[0] = A[g][2t..2t+1], a[1] = A[g+8][2t..], a[2] = A[g][2t+8..],
// a[3] = A[g+8][2t+8..]; b[0] = B[2t..2t+1][g], b[1] = B[2t+8..2t+9][g];
// d[0..1] = D[g][2t..2t+1], d[2..3] = D[g+8][2t..2t+1].
__device__ __forceinline__ void mma_bf16_16816(float* d, const uint32_t* a, const uint32_t* b) {
#ifdef LA_CUDA_EMULATE
    ::lazyattn::emu::mma_m16n8k16_bf16(d, a, b);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

}  // namespace lazyattn::backend::cuda
