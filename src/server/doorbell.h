// Doorbell: wakes one waiting HTTP worker when any of several requests has news. Rung from the
// engine thread by each request's event callback; a stream over n choices waits on one bell
// instead of polling n handles.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace lazyattn::server {

class Doorbell {
public:
    void ring() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            ++rings_;
        }
        cv_.notify_all();
    }
    // Waits until the bell rang more than `seen` times in all, or the timeout passed; updates `seen`.
    void wait(uint64_t& seen, int timeout_ms) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return rings_ > seen; });
        seen = rings_;
    }
    uint64_t rings() {
        std::lock_guard<std::mutex> lock(mu_);
        return rings_;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    uint64_t rings_ = 0;
};

}  // namespace lazyattn::server
