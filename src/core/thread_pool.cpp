#include "core/thread_pool.h"

#include <algorithm>

namespace lazyattn {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
    for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
        std::function<void(int, int)> task;
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            task = task_;
        }
        task(index, num_threads_);
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (--num_pending_ == 0) done_.notify_one();
        }
    }
}

void ThreadPool::run_on_all(const std::function<void(int, int)>& fn) {
    bool expected = false;
    if (num_threads_ == 1 || !busy_.compare_exchange_strong(expected, true)) {
        // Single thread, or a nested call from inside a running loop: run inline.
        fn(0, 1);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        task_ = fn;
        num_pending_ = num_threads_ - 1;
        ++generation_;
    }
    wake_.notify_all();
    fn(0, num_threads_);
    {
        std::unique_lock<std::mutex> lock(mu_);
        done_.wait(lock, [&] { return num_pending_ == 0; });
        task_ = nullptr;
    }
    busy_.store(false);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int64_t grain) {
    if (n <= 0) return;
    grain = std::max<int64_t>(1, grain);
    if (n <= grain || num_threads_ == 1) {
        for (int64_t i = 0; i < n; ++i) fn(i);
        return;
    }
    std::atomic<int64_t> next{0};
    run_on_all([&](int, int) {
        for (;;) {
            int64_t begin = next.fetch_add(grain);
            if (begin >= n) break;
            int64_t end = std::min(n, begin + grain);
            for (int64_t i = begin; i < end; ++i) fn(i);
        }
    });
}

}  // namespace lazyattn
