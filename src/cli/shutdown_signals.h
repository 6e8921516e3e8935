// ShutdownSignals: how `lazyattn serve` takes SIGINT and SIGTERM, from its first line on.
//
// Both signals are blocked before any thread starts (every thread inherits the mask) and taken
// by one thread of this class with sigwait(). Threads started before the mask (a library's pool
// created when it was loaded, e.g. OpenBLAS's) do not block them; the kernel may hand a signal to
// one of those, whose default action would kill the process mid-drain, so a handler there passes
// it on to the taker. Until serving() is called (model loading, corpus reading, the KV pool), a
// signal ends the process at once with 128 + its number: there is nothing to drain, and start-up
// may be blocked where nothing polls (a huge file, a slow store). From serving() on, wait()
// returns it, and the caller drains.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

namespace lazyattn::cli {

class ShutdownSignals {
public:
    ShutdownSignals();  // call before any thread of ours starts
    ~ShutdownSignals();
    ShutdownSignals(const ShutdownSignals&) = delete;
    ShutdownSignals& operator=(const ShutdownSignals&) = delete;

    // From now on a signal is the caller's to handle (wait()).
    void serving();
    // Blocks until SIGINT or SIGTERM arrives; returns it.
    int wait();

private:
    void take();  // the taker thread

    std::mutex mu_;
    std::condition_variable cv_;
    bool serving_ = false;
    int signal_ = 0;
    std::thread taker_;
};

}  // namespace lazyattn::cli
