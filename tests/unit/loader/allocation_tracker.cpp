// Global operator new/delete replacement for the loader test binary. In its own translation unit
// so no caller sees new and free paired (which GCC's -Wmismatched-new-delete would flag).
#include "allocation_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_tracking{false};
std::atomic<size_t> g_largest{0};

void note(size_t n) {
    if (g_tracking.load(std::memory_order_relaxed)) {
        size_t prev = g_largest.load(std::memory_order_relaxed);
        while (n > prev && !g_largest.compare_exchange_weak(prev, n)) {
        }
    }
}
}  // namespace

void* operator new(size_t n) {
    note(n);
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

// Over-aligned types (alignas above 16) come through these.
void* operator new(size_t n, std::align_val_t al) {
    note(n);
    const size_t a = static_cast<size_t>(al);
    if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
    throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t al) { return operator new(n, al); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace lazyattn::loader::test {

AllocationTracker::AllocationTracker() {
    g_largest = 0;
    g_tracking = true;
}
AllocationTracker::~AllocationTracker() { g_tracking = false; }
size_t AllocationTracker::largest() const { return g_largest.load(); }

}  // namespace lazyattn::loader::test
