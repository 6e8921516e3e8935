// Wake-ups for AsyncLLM (python/lazyattn/_async.py): one eventfd per event loop, written by the
// engine's callback when a request of that loop has news, read by loop.add_reader; the events
// themselves wait in each request's Mailbox. No thread per request, no polling.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/request/request_handle.h"
#include "engine_state.h"

namespace lazyattn::python {

// Which requests of one event loop have news: the engine thread names them, the loop takes the
// names when the eventfd is readable. A write only when the fd is not already readable (coalesced);
// the names are at most one per request between two takes (see Mailbox::post).
class NotifierCore {
public:
    NotifierCore() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
        if (fd_ < 0) throw EngineError(std::string("eventfd: ") + std::strerror(errno));
    }
    ~NotifierCore() { close(); }
    NotifierCore(const NotifierCore&) = delete;
    NotifierCore& operator=(const NotifierCore&) = delete;

    int fd() {
        std::lock_guard<std::mutex> lock(mu_);
        return fd_;
    }
    // Engine thread: `key` has news.
    void ring(uint64_t key) {
        std::lock_guard<std::mutex> lock(mu_);
        if (fd_ < 0) return;  // closed: nobody listens
        ready_.push_back(key);
        if (armed_) return;
        armed_ = true;
        const uint64_t one = 1;
        // Non-blocking; fails only when the counter would overflow, and then it is readable anyway.
        [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof(one));
    }
    // Loop thread: the keys with news since the last take; the fd is drained.
    std::vector<uint64_t> take() {
        std::lock_guard<std::mutex> lock(mu_);
        if (fd_ >= 0) {
            uint64_t count = 0;
            [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof(count));
        }
        armed_ = false;
        return std::exchange(ready_, {});
    }
    void close() {
        std::lock_guard<std::mutex> lock(mu_);
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        ready_.clear();
    }

private:
    std::mutex mu_;
    int fd_ = -1;
    bool armed_ = false;
    std::vector<uint64_t> ready_;
};

// One async request's events, copied by the engine's callback. The callback runs before the
// handle itself holds the event, so an async reader reads here, never the handle's queue: a
// wake-up always finds what woke it.
struct Mailbox {
    Mailbox(std::shared_ptr<NotifierCore> n, uint64_t k) : notifier(std::move(n)), key(k) {}
    void post(const engine::RequestEvent& e) {
        bool was_empty = false;
        {
            std::lock_guard<std::mutex> lock(mu);
            was_empty = events.empty();
            events.push_back(e);
        }
        if (was_empty) notifier->ring(key);  // a reader that took the rest sees this one by the ring
    }
    std::deque<engine::RequestEvent> take() {
        std::lock_guard<std::mutex> lock(mu);
        return std::exchange(events, {});
    }

    std::mutex mu;
    std::deque<engine::RequestEvent> events;
    const std::shared_ptr<NotifierCore> notifier;
    const uint64_t key;
};

// lazyattn._lazyattn.Notifier: one per event loop (python/lazyattn/_async.py).
class Notifier {
public:
    Notifier() : core_(std::make_shared<NotifierCore>()) {}
    int fd() const { return core_->fd(); }
    std::vector<uint64_t> take() { return core_->take(); }
    void close() { core_->close(); }
    const std::shared_ptr<NotifierCore>& core() const { return core_; }

private:
    std::shared_ptr<NotifierCore> core_;
};

inline uint64_t next_mailbox_key() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1);
}

}  // namespace lazyattn::python
