// A persistent pool of worker threads for data-parallel loops. The calling thread takes part in
// every loop, so a pool of N threads starts N-1 workers. One loop runs at a time (the engine has
// one inference thread); nested parallel_for calls run inline.
//
// Decode runs hundreds of short loops per token, so waking workers through the kernel would cost
// more than many of the loops themselves: workers spin on the loop counter for a short while after
// each loop (kSpinMicros) and only then sleep on a condition variable. Loops are passed as a
// function pointer plus context (no std::function copies or allocations per loop).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace lazyattn {

class ThreadPool {
public:
    explicit ThreadPool(int num_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int num_threads() const { return num_threads_; }

    // Calls fn(i) for every i in [0, n), spread over the threads in dynamic chunks of `grain`.
    template <class Fn>
    void parallel_for(int64_t n, const Fn& fn, int64_t grain = 1);
    // Calls fn(thread_index, num_threads) once on each thread: for static partitioning.
    template <class Fn>
    void run_on_all(const Fn& fn) {
        run_on_all_raw([](const void* ctx, int t, int nt) { (*static_cast<const Fn*>(ctx))(t, nt); }, &fn);
    }

    // How long an idle worker polls for the next loop before it sleeps.
    static constexpr int kSpinMicros = 200;
    // How long the caller polls for the workers to finish a loop before it sleeps.
    static constexpr int kCallerSpinMicros = 50;

private:
    using TaskFn = void (*)(const void* ctx, int thread_index, int num_threads);
    void run_on_all_raw(TaskFn fn, const void* ctx);
    void worker_loop(int index);

    int num_threads_;
    std::vector<std::thread> workers_;
    // The current loop: published by bumping generation_ (release), read by workers (acquire).
    TaskFn task_fn_ = nullptr;
    const void* task_ctx_ = nullptr;
    alignas(64) std::atomic<uint64_t> generation_{0};
    alignas(64) std::atomic<int> num_pending_{0};
    alignas(64) std::atomic<int> num_sleeping_{0};
    std::atomic<bool> caller_sleeping_{false};
    std::atomic<bool> stop_{false};
    std::atomic<bool> busy_{false};
    std::mutex mu_;
    std::condition_variable wake_;
    std::condition_variable done_;
};

template <class Fn>
void ThreadPool::parallel_for(int64_t n, const Fn& fn, int64_t grain) {
    if (n <= 0) return;
    grain = grain < 1 ? 1 : grain;
    if (n <= grain || num_threads_ == 1) {
        for (int64_t i = 0; i < n; ++i) fn(i);
        return;
    }
    alignas(64) std::atomic<int64_t> next{0};
    run_on_all([&](int, int) {
        for (;;) {
            const int64_t begin = next.fetch_add(grain, std::memory_order_relaxed);
            if (begin >= n) break;
            const int64_t end = begin + grain < n ? begin + grain : n;
            for (int64_t i = begin; i < end; ++i) fn(i);
        }
    });
}

}  // namespace lazyattn
