// A persistent pool of worker threads for data-parallel loops. The calling thread takes part in
// every loop, so a pool of N threads starts N-1 workers. One loop runs at a time (the engine has
// one inference thread); nested parallel_for calls run inline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
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
    void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int64_t grain = 1);
    // Calls fn(thread_index, num_threads) once on each thread: for static partitioning.
    void run_on_all(const std::function<void(int, int)>& fn);

private:
    void worker_loop(int index);

    int num_threads_;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::function<void(int, int)> task_;
    uint64_t generation_ = 0;
    int num_pending_ = 0;
    bool stop_ = false;
    std::atomic<bool> busy_{false};
};

}  // namespace lazyattn
