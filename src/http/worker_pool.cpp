#include "http/worker_pool.h"

namespace lazyattn::http {

WorkerPool::WorkerPool(int num_threads) {
    for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() { stop(); }

bool WorkerPool::post(std::function<void()> job) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return false;
        jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
}

std::deque<std::function<void()>> WorkerPool::stop() {
    std::deque<std::function<void()>> left;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
        left.swap(jobs_);
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
        if (t.joinable()) t.join();
    }
    return left;
}

void WorkerPool::run() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
            if (stopping_) return;
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        job();
    }
}

}  // namespace lazyattn::http
