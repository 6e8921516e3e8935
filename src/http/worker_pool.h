// WorkerPool: a fixed set of threads running posted jobs in order of arrival. Used for the two
// lanes of HTTP handlers; stop() lets running jobs finish and drops the ones not started.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lazyattn::http {

class WorkerPool {
public:
    explicit WorkerPool(int num_threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // False (and the job is dropped) after stop().
    bool post(std::function<void()> job);
    // Jobs not started yet are returned to the caller, which must dispose of them.
    std::deque<std::function<void()>> stop();

private:
    void run();

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace lazyattn::http
