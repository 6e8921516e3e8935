#include "engine/serving_engine.h"

#include <algorithm>

namespace lazyattn::engine {

ServingEngine::ServingEngine(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config)
    : scheduler_(model, tokenizer, config) {
    snapshot_ = scheduler_.stats();
    thread_ = std::thread([this] { loop(); });
}

ServingEngine::~ServingEngine() { shutdown(true); }

Expected<std::shared_ptr<RequestHandle>> ServingEngine::submit(RagRequest request, RequestHandle::Callback callback) {
    LA_RETURN_IF_ERROR(scheduler_.check_request(request));  // reads only immutable state
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status(StatusCode::kCancelled, "the engine is shutting down");
    if (int64_t(incoming_.size()) + snapshot_.num_waiting >= scheduler_.config().max_queue) {
        return resource_exhausted("the queue is full (" + std::to_string(scheduler_.config().max_queue) +
                                  " waiting requests)");
    }
    auto handle = std::make_shared<RequestHandle>(next_id_++, std::move(callback));
    incoming_.push_back({std::move(request), handle});
    in_flight_.push_back(handle);
    wake_.notify_one();
    return handle;
}

void ServingEngine::shutdown(bool cancel_in_flight) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (!thread_.joinable()) return;
        stopping_ = true;
        cancel_all_ = cancel_all_ || cancel_in_flight;
        if (cancel_all_) {
            for (auto& h : in_flight_) h->cancel();
        }
    }
    wake_.notify_one();
    thread_.join();
}

SchedulerStats ServingEngine::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return snapshot_;
}

void ServingEngine::loop() {
    for (;;) {
        std::deque<Pending> fresh;
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return !incoming_.empty() || stopping_ || !scheduler_.idle(); });
            fresh.swap(incoming_);
            in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                            [](const auto& h) { return h->finished(); }),
                             in_flight_.end());
            if (stopping_ && fresh.empty() && scheduler_.idle()) return;
        }
        for (Pending& p : fresh) {
            auto handle = p.handle;
            const Status st = scheduler_.enqueue(std::move(p.request), handle);
            if (!st.ok()) handle->finish("error", {}, st);
        }
        scheduler_.step();
        const SchedulerStats s = scheduler_.stats();
        std::lock_guard<std::mutex> lock(mu_);
        snapshot_ = s;
    }
}

}  // namespace lazyattn::engine
