// Measures the machine's memory read bandwidth, the roofline the decode numbers in
// docs/benchmarks.md are compared with: each of N threads sums its own slice of a 1 GiB buffer
// (far larger than any cache), best of 5 passes.
//   build/tools/read_bandwidth [threads]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/large_buffer.h"

namespace {

__attribute__((target_clones("default", "avx2", "arch=x86-64-v4"))) uint64_t sum_words(const uint64_t* p, size_t n) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    return s0 + s1 + s2 + s3;
}

}  // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
    const size_t bytes = size_t(1) << 30;
    lazyattn::LargeBuffer buf(bytes);
    auto* words = reinterpret_cast<uint64_t*>(buf.data());
    const size_t n = bytes / 8;
    for (size_t i = 0; i < n; i += 512) words[i] = i;
    double best = 0.0;
    uint64_t sink = 0;
    for (int pass = 0; pass < 5; ++pass) {
        std::vector<uint64_t> sums(threads);
        std::vector<std::thread> pool;
        const auto t0 = std::chrono::steady_clock::now();
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                const size_t begin = n / threads * t, end = t + 1 == threads ? n : n / threads * (t + 1);
                sums[t] = sum_words(words + begin, end - begin);
            });
        }
        for (auto& th : pool) th.join();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (uint64_t x : sums) sink += x;
        best = std::max(best, double(bytes) / s / 1e9);
    }
    std::printf("read bandwidth, %d thread(s): %.1f GB/s (best of 5 passes over 1 GiB; checksum %llu)\n", threads, best,
                static_cast<unsigned long long>(sink % 1000));
    return 0;
}
