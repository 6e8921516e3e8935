// The CPU emulator of cuda_emulator.h: fibers with a hand-written x86-64 context switch (no system
// call per switch), a randomized round-robin scheduler per block, warp collectives, deferred
// cp.async, guard-paged device memory, and the runtime API subset lazyattn calls.
#include "support/cuda_emulator/cuda_emulator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#if !defined(__x86_64__)
#error "the CUDA emulator's context switch is written for x86-64"
#endif

// emu_switch(save, to): saves the callee-saved registers and stack pointer of the running context
// into *save, then resumes the context whose stack pointer is `to`.
extern "C" void emu_switch(void** save, void* to);
asm(R"(
.text
.globl emu_switch
.type emu_switch,@function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size emu_switch,.-emu_switch
.section .note.GNU-stack,"",@progbits
.text
)");

namespace lazyattn::emu {
namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kMaxSmemBytes = 227 * 1024;
constexpr size_t kDefaultSmemBytes = 48 * 1024;

struct Barrier {
    int expected = 0;
    int arrived = 0;
    uint64_t generation = 0;
};

struct Copy {
    void* dst;
    unsigned char bytes[16];
};

struct Fiber {
    void* sp = nullptr;
    char* stack = nullptr;
    bool done = false;
    const Barrier* waiting = nullptr;
    uint64_t wait_generation = 0;
    uint3 tid{};
    int linear = 0;
    std::vector<Copy> open_group;
    std::deque<std::vector<Copy>> groups;
};

struct WarpState {
    Barrier barrier;
    uint64_t slots[32][8];
    const void* addresses[32];
};

struct Emulator {
    dim3 grid, block;
    uint3 block_index{};
    std::vector<Fiber> fibers;
    std::vector<WarpState> warps;
    Barrier block_barrier;
    std::vector<unsigned char> smem;
    Fiber* current = nullptr;
    void* scheduler_sp = nullptr;
    const std::function<void()>* body = nullptr;
    std::vector<char*> stacks;
    std::mt19937_64 rng{12345};
    std::map<std::pair<int, const void*>, size_t> smem_limits;  // (device, kernel) -> opted-in bytes
    int device = 0;                                             // cudaSetDevice's
    bool running = false;
};

Emulator& emulator() {
    static Emulator* e = new Emulator();  // never destroyed: device memory may be freed at exit
    return *e;
}

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "CUDA emulator: %s\n", what);
    std::abort();
}

Fiber& current() {
    Emulator& e = emulator();
    if (e.current == nullptr) fail("device function called outside a kernel launch");
    return *e.current;
}

void yield() {
    Emulator& e = emulator();
    emu_switch(&e.current->sp, e.scheduler_sp);
}

void deliver_some(Fiber& f);

void arrive_and_wait(Barrier& b) {
    Fiber& f = current();
    deliver_some(f);
    const uint64_t gen = b.generation;
    if (++b.arrived == b.expected) {
        b.arrived = 0;
        ++b.generation;
        f.waiting = nullptr;
    } else {
        f.waiting = &b;
        f.wait_generation = gen;
    }
    yield();  // always: lets the scheduler interleave fibers at every barrier
}

void fiber_main() {
    Emulator& e = emulator();
    (*e.body)();
    Fiber& f = *e.current;
    if (!f.open_group.empty() || !f.groups.empty()) {
        // Copies never waited for still land (the hardware finishes them too).
        cp_async_commit();
        cp_async_wait(0);
    }
    f.done = true;
    emu_switch(&f.sp, e.scheduler_sp);
    fail("finished fiber resumed");
}

void init_fiber(Fiber& f, char* stack) {
    f.stack = stack;
    auto top = reinterpret_cast<uintptr_t>(stack + kStackBytes) & ~uintptr_t(15);
    auto* words = reinterpret_cast<void**>(top);
    words[-1] = nullptr;                               // fake return address of fiber_main
    words[-2] = reinterpret_cast<void*>(&fiber_main);  // `ret` of emu_switch jumps here
    for (int i = 3; i <= 8; ++i) words[-i] = nullptr;  // rbp rbx r12 r13 r14 r15
    f.sp = &words[-8];
}

void run_block() {
    Emulator& e = emulator();
    const int n = int(e.fibers.size());
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    const int num_warps = (n + 31) / 32;
    std::vector<char> stalled(num_warps);
    for (;;) {
        bool alive = false, progressed = false, skipped = false;
        std::shuffle(order.begin(), order.end(), e.rng);
        // Each round stalls a random half of the warps, so warps drift apart by whole loop
        // iterations as they can on hardware (a missing __syncthreads then shows).
        for (auto& s : stalled) s = char(e.rng() % 2);
        for (int i : order) {
            Fiber& f = e.fibers[i];
            if (f.done) continue;
            alive = true;
            if (f.waiting != nullptr && f.waiting->generation == f.wait_generation) continue;
            if (stalled[i / 32]) {
                skipped = true;
                continue;
            }
            f.waiting = nullptr;
            e.current = &f;
            emu_switch(&e.scheduler_sp, f.sp);
            e.current = nullptr;
            progressed = true;
        }
        if (!alive) return;
        if (!progressed && !skipped)
            fail("deadlock: threads wait at a barrier other threads never reach (divergent barrier or early exit)");
    }
}

WarpState& warp() { return emulator().warps[current().linear / 32]; }

void deliver(std::vector<Copy>& group) {
    for (Copy& c : group) std::memcpy(c.dst, c.bytes, 16);
    group.clear();
}

// In-flight copies may land at any moment before the wait that retires them: at each barrier
// each one lands with probability 1/4 (so both early and late landing get exercised).
void deliver_some(Fiber& f) {
    auto& rng = emulator().rng;
    auto land = [&](std::vector<Copy>& group) {
        for (size_t i = 0; i < group.size();) {
            if (rng() % 4 == 0) {
                std::memcpy(group[i].dst, group[i].bytes, 16);
                group[i] = group.back();
                group.pop_back();
            } else {
                ++i;
            }
        }
    };
    land(f.open_group);
    for (auto& g : f.groups) land(g);
}

}  // namespace

const uint3& thread_idx() { return current().tid; }
const uint3& block_idx() { return emulator().block_index; }
const dim3& block_dim() { return emulator().block; }
const dim3& grid_dim() { return emulator().grid; }
int lane_id() { return current().linear % 32; }

void sync_threads() { arrive_and_wait(emulator().block_barrier); }

void sync_warp() { arrive_and_wait(warp().barrier); }

unsigned char* dynamic_smem() { return emulator().smem.data(); }

uint64_t warp_exchange(uint64_t value, int src_lane) {
    WarpState& w = warp();
    w.slots[lane_id()][0] = value;
    arrive_and_wait(w.barrier);
    const uint64_t r = w.slots[src_lane][0];
    arrive_and_wait(w.barrier);
    return r;
}

void ldmatrix_x4(uint32_t* r, const void* smem_row, bool trans) {
    WarpState& w = warp();
    const int lane = lane_id();
    if (reinterpret_cast<uintptr_t>(smem_row) % 16 != 0) fail("ldmatrix row address not 16-byte aligned");
    const auto* base = emulator().smem.data();
    const auto* p = static_cast<const unsigned char*>(smem_row);
    if (p < base || p + 16 > base + emulator().smem.size()) fail("ldmatrix address outside shared memory");
    w.addresses[lane] = smem_row;
    arrive_and_wait(w.barrier);
    const int g = lane / 4, t = lane % 4;
    for (int m = 0; m < 4; ++m) {
        uint16_t lo, hi;
        if (!trans) {
            // Row g of matrix m, elements 2t and 2t+1.
            const auto* row = static_cast<const uint16_t*>(w.addresses[8 * m + g]);
            lo = row[2 * t];
            hi = row[2 * t + 1];
        } else {
            // Element (row 2t, col g) and (row 2t+1, col g) of matrix m.
            lo = static_cast<const uint16_t*>(w.addresses[8 * m + 2 * t])[g];
            hi = static_cast<const uint16_t*>(w.addresses[8 * m + 2 * t + 1])[g];
        }
        r[m] = uint32_t(lo) | (uint32_t(hi) << 16);
    }
    arrive_and_wait(w.barrier);
}

namespace {
float bf16_bits_to_float(uint16_t b) {
    const uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace

void mma_m16n8k16_bf16(float* d, const uint32_t* a, const uint32_t* b) {
    WarpState& w = warp();
    const int lane = lane_id();
    for (int i = 0; i < 4; ++i) w.slots[lane][i] = a[i];
    w.slots[lane][4] = b[0];
    w.slots[lane][5] = b[1];
    arrive_and_wait(w.barrier);
    // Rebuild A (16x16) and B (16x8) from the fragments of all lanes (PTX ISA, "Matrix Fragments
    // for mma.m16n8k16 with floating point type").
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int i = 0; i < 8; ++i) {  // a_i: 16-bit element i of the lane's four registers
            const uint32_t reg = uint32_t(w.slots[l][i / 2]);
            const uint16_t bits = (i & 1) ? uint16_t(reg >> 16) : uint16_t(reg & 0xffff);
            const int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
            const int col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
            A[row][col] = bf16_bits_to_float(bits);
        }
        for (int i = 0; i < 4; ++i) {
            const uint32_t reg = uint32_t(w.slots[l][4 + i / 2]);
            const uint16_t bits = (i & 1) ? uint16_t(reg >> 16) : uint16_t(reg & 0xffff);
            const int row = t * 2 + (i & 1) + (i >= 2 ? 8 : 0);
            B[row][g] = bf16_bits_to_float(bits);
        }
    }
    arrive_and_wait(w.barrier);
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
        const int row = i < 2 ? g : g + 8;
        const int col = t * 2 + (i & 1);
        float acc = d[i];
        for (int k = 0; k < 16; ++k) acc = std::fma(A[row][k], B[k][col], acc);
        d[i] = acc;
    }
}

void cp_async_16(void* dst, const void* src, int src_bytes) {
    Emulator& e = emulator();
    if (reinterpret_cast<uintptr_t>(dst) % 16 != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0) {
        fail("cp.async address not 16-byte aligned");
    }
    auto* d = static_cast<unsigned char*>(dst);
    if (d < e.smem.data() || d + 16 > e.smem.data() + e.smem.size()) fail("cp.async destination outside shared memory");
    if (src_bytes < 0 || src_bytes > 16) fail("cp.async source size out of range");
    Copy c{dst, {}};
    if (src_bytes > 0) std::memcpy(c.bytes, src, size_t(src_bytes));
    current().open_group.push_back(c);
}

void cp_async_commit() {
    Fiber& f = current();
    f.groups.push_back(std::move(f.open_group));
    f.open_group.clear();
}

void cp_async_wait(int max_pending_groups) {
    Fiber& f = current();
    while (int(f.groups.size()) > max_pending_groups) {
        deliver(f.groups.front());
        f.groups.pop_front();
    }
}

bool smem_allowed(const void* kernel, size_t smem_bytes) {
    if (smem_bytes <= kDefaultSmemBytes) return true;
    auto it = emulator().smem_limits.find({emulator().device, kernel});
    return it != emulator().smem_limits.end() && smem_bytes <= it->second;
}

void set_last_error(cudaError_t e);

void launch(dim3 grid, dim3 block, size_t smem_bytes, const void* kernel, const std::function<void()>& body) {
    Emulator& e = emulator();
    // As the hardware: a launch above the current device's opted-in shared memory does not run and
    // leaves the error for cudaGetLastError.
    if (!smem_allowed(kernel, smem_bytes)) {
        std::fprintf(stderr, "CUDA emulator: dynamic shared memory above the kernel's limit on device %d\n", e.device);
        set_last_error(cudaErrorInvalidValue);
        return;
    }
    if (e.running) fail("nested kernel launch");
    const int threads = int(block.x * block.y * block.z);
    if (threads <= 0 || threads > 1024 || threads % 32 != 0) fail("block size must be a multiple of 32 up to 1024");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) fail("bad grid");
    e.running = true;
    e.grid = grid;
    e.block = block;
    e.body = &body;
    while (int(e.stacks.size()) < threads) e.stacks.push_back(static_cast<char*>(std::malloc(kStackBytes)));
    for (uint32_t bz = 0; bz < grid.z; ++bz) {
        for (uint32_t by = 0; by < grid.y; ++by) {
            for (uint32_t bx = 0; bx < grid.x; ++bx) {
                e.block_index = {bx, by, bz};
                e.smem.assign(std::max<size_t>(smem_bytes, 16), 0xff);  // NaN bytes
                e.fibers.assign(threads, Fiber{});
                e.warps.assign(threads / 32, WarpState{});
                for (auto& w : e.warps) w.barrier.expected = 32;
                e.block_barrier = Barrier{};
                e.block_barrier.expected = threads;
                for (int i = 0; i < threads; ++i) {
                    Fiber& f = e.fibers[i];
                    f.linear = i;
                    f.tid = {uint32_t(i % block.x), uint32_t((i / block.x) % block.y),
                             uint32_t(i / (block.x * block.y))};
                    init_fiber(f, e.stacks[i]);
                }
                run_block();
            }
        }
    }
    e.running = false;
}

namespace {

// Device allocations: each ends at a guard page so reading past the end faults.
struct Allocation {
    void* map;
    size_t map_bytes;
    size_t body_bytes;  // what the caller asked for, rounded to 256 (counted against the capacity)
};
std::map<void*, Allocation>& allocations() {
    static auto* a = new std::map<void*, Allocation>();  // never destroyed (see emulator())
    return *a;
}
// The map and the bytes allocated against lazyattn::emu::kDeviceMemoryBytes (engines on
// several threads allocate).
std::mutex g_allocation_mu;
size_t g_allocated_bytes = 0;
cudaError_t g_last_error = cudaSuccess;
uint64_t g_float_atomic_adds = 0;

}  // namespace

void set_last_error(cudaError_t e) { g_last_error = e; }
void set_smem_limit(const void* kernel, size_t bytes) { emulator().smem_limits[{emulator().device, kernel}] = bytes; }
int current_device() { return emulator().device; }
void set_current_device(int device) { emulator().device = device; }
uint64_t float_atomic_adds() { return g_float_atomic_adds; }
void count_float_atomic_add() { ++g_float_atomic_adds; }

}  // namespace lazyattn::emu

using lazyattn::emu::Allocation;
using lazyattn::emu::allocations;
using lazyattn::emu::g_allocated_bytes;
using lazyattn::emu::g_allocation_mu;

extern "C" {

cudaError_t cudaMalloc(void** ptr, size_t size) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t body = (std::max<size_t>(size, 1) + 255) / 256 * 256;
    const size_t pages = (body + page - 1) / page;
    const size_t map_bytes = (pages + 1) * page;
    std::lock_guard<std::mutex> lock(g_allocation_mu);
    // A device has a capacity: past it cudaMalloc fails at once, as on the hardware (a sparse
    // mapping would otherwise promise terabytes and the first touch would kill the process).
    if (body > lazyattn::emu::kDeviceMemoryBytes - g_allocated_bytes) return cudaErrorMemoryAllocation;
    const bool sparse = size >= lazyattn::emu::kSparseAllocationBytes;  // zero pages, backed when touched
    void* map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | (sparse ? MAP_NORESERVE : 0), -1, 0);
    if (map == MAP_FAILED) return cudaErrorMemoryAllocation;
    auto* guard = static_cast<char*>(map) + pages * page;
    mprotect(guard, page, PROT_NONE);
    void* p = guard - body;
    if (!sparse) std::memset(p, 0xff, body);
    allocations()[p] = Allocation{map, map_bytes, body};
    g_allocated_bytes += body;
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
    if (ptr == nullptr) return cudaSuccess;
    std::lock_guard<std::mutex> lock(g_allocation_mu);
    auto it = allocations().find(ptr);
    if (it == allocations().end()) return cudaErrorInvalidValue;
    g_allocated_bytes -= it->second.body_bytes;
    munmap(it->second.map, it->second.map_bytes);
    allocations().erase(it);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind) {
    if (count > 0) std::memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
    std::memset(ptr, value, count);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t) { return cudaMemset(ptr, value, count); }

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
    *stream = nullptr;
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) { return cudaStreamCreate(stream); }
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* count) {
    *count = lazyattn::emu::kNumDevices;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
    *device = lazyattn::emu::current_device();
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= lazyattn::emu::kNumDevices) return cudaErrorInvalidDevice;
    lazyattn::emu::set_current_device(device);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int) {
    switch (attr) {
        case cudaDevAttrMultiProcessorCount:
            *value = 4;
            break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin:
            *value = int(lazyattn::emu::kMaxSmemBytes);
            break;
        case cudaDevAttrComputeCapabilityMajor:
            *value = 9;
            break;
        case cudaDevAttrComputeCapabilityMinor:
            *value = 0;
            break;
        default:
            *value = 0;
            break;
    }
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || size_t(value) > lazyattn::emu::kMaxSmemBytes) return cudaErrorInvalidValue;
        lazyattn::emu::set_smem_limit(func, size_t(value));
    }
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    const cudaError_t e = lazyattn::emu::g_last_error;
    lazyattn::emu::g_last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return lazyattn::emu::g_last_error; }
const char* cudaGetErrorString(cudaError_t error) { return error == cudaSuccess ? "no error" : "emulated CUDA error"; }
const char* cudaGetErrorName(cudaError_t error) { return error == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated"; }
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
    std::lock_guard<std::mutex> lock(g_allocation_mu);
    *free_bytes = lazyattn::emu::kDeviceMemoryBytes - g_allocated_bytes;
    *total = lazyattn::emu::kDeviceMemoryBytes;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
    *v = 0;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
    *v = 0;
    return cudaSuccess;
}

}  // extern "C"
