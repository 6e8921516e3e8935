#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LA_CPU_RELAX() _mm_pause()
#else
#define LA_CPU_RELAX() std::this_thread::yield()
#endif

namespace lazyattn {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `done()` for about `micros` microseconds; true if it became true. It yields the core
// between bursts of polls: free when nothing else is runnable, and when the machine is
// oversubscribed a spinning thread would otherwise hold a core the thread it waits for needs.
template <class Pred>
bool spin_until(const Pred& done, int micros) {
    const auto deadline = Clock::now() + std::chrono::microseconds(micros);
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            if (done()) return true;
            LA_CPU_RELAX();
        }
        std::this_thread::yield();
        if (Clock::now() >= deadline) return done();
    }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
    for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_.store(true);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
        const auto has_work = [&] {
            return stop_.load(std::memory_order_relaxed) || generation_.load(std::memory_order_acquire) != seen;
        };
        if (!spin_until(has_work, kSpinMicros)) {
            // Sleep. num_sleeping_ is raised under the mutex before the last check, and the caller
            // bumps generation_ before reading num_sleeping_ (both seq_cst), so a wake-up is never
            // missed: either we see the new generation, or the caller sees us and notifies.
            std::unique_lock<std::mutex> lock(mu_);
            num_sleeping_.fetch_add(1);
            wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
            num_sleeping_.fetch_sub(1);
        }
        if (stop_.load()) return;
        seen = generation_.load(std::memory_order_acquire);
        task_fn_(task_ctx_, index, num_threads_);
        // The last worker wakes the caller if it went to sleep (same handshake as above).
        if (num_pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
            { std::lock_guard<std::mutex> lock(mu_); }
            done_.notify_one();
        }
    }
}

void ThreadPool::run_on_all_raw(TaskFn fn, const void* ctx) {
    bool expected = false;
    if (num_threads_ == 1 || !busy_.compare_exchange_strong(expected, true)) {
        // Single thread, or a nested call from inside a running loop: run inline.
        fn(ctx, 0, 1);
        return;
    }
    task_fn_ = fn;
    task_ctx_ = ctx;
    num_pending_.store(num_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1);  // seq_cst: publishes the task, ordered before the load below
    if (num_sleeping_.load() > 0) {
        { std::lock_guard<std::mutex> lock(mu_); }
        wake_.notify_all();
    }
    fn(ctx, 0, num_threads_);
    // The workers run the same loop, so this wait is short unless one was descheduled (another
    // process took its core): then sleep, so that our core goes to whoever is runnable.
    const auto done = [&] { return num_pending_.load(std::memory_order_acquire) == 0; };
    if (!spin_until(done, kCallerSpinMicros)) {
        std::unique_lock<std::mutex> lock(mu_);
        caller_sleeping_.store(true);
        done_.wait(lock, [&] { return num_pending_.load() == 0; });
        caller_sleeping_.store(false);
    }
    busy_.store(false);
}

}  // namespace lazyattn
