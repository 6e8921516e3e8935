// Lets the statically linked GPU binaries (test_cuda, bench_cuda_attention) start on hosts with
// glibc older than the build machine's: the static libstdc++ of GCC 12 seeds std::random_device
// from arc4random, which glibc added in 2.36. This definition, linked ahead of libstdc++.a,
// satisfies that reference with the getrandom system call (glibc 2.25), so the binaries need
// glibc 2.35 at most (the static unwinder's _dl_find_object).
#include <sys/random.h>

#include <cstdint>

extern "C" uint32_t arc4random(void) {
    uint32_t value = 0;
    while (getrandom(&value, sizeof value, 0) != ssize_t(sizeof value)) {
    }
    return value;
}
