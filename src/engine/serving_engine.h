// ServingEngine: the multi-threaded face of the Scheduler. submit() and cancel() may be called
// from any number of threads; one inference thread owns the scheduler (and so the KV pool) and
// runs steps while there is work, sleeping otherwise. Requests that can never run are refused by
// submit() itself, so callers get the error at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/scheduler.h"

namespace lazyattn::engine {

class ServingEngine {
public:
    ServingEngine(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config);
    ~ServingEngine();
    ServingEngine(const ServingEngine&) = delete;
    ServingEngine& operator=(const ServingEngine&) = delete;

    // Thread-safe. kInvalidArgument / kOutOfRange for a bad request, kResourceExhausted when it
    // can never fit, kUnavailable when the queue is full, kCancelled after shutdown began.
    Expected<std::shared_ptr<RequestHandle>> submit(RagRequest request, RequestHandle::Callback callback = {});
    // Stops accepting; finishes in-flight requests (or cancels them) and joins the thread.
    void shutdown(bool cancel_in_flight);

    // A snapshot taken after the latest step (thread-safe).
    SchedulerStats stats() const;

    // Documents (thread-safe; each runs on the inference thread between steps). pin_document()
    // computes the document if it is not cached yet, then pins it.
    Expected<DocumentInfo> pin_document(std::vector<int32_t> tokens);
    Status unpin_document(const std::string& id);
    std::vector<DocumentInfo> list_documents();
    std::optional<std::vector<int32_t>> document_tokens(const std::string& id);
    const EngineConfig& config() const { return scheduler_.config(); }

private:
    struct Pending {
        RagRequest request;
        std::shared_ptr<RequestHandle> handle;
    };
    void loop();
    // Runs fn(scheduler) on the inference thread and waits for it.
    void run_on_engine_thread(std::function<void(Scheduler&)> fn);

    Scheduler scheduler_;
    mutable std::mutex mu_;
    std::condition_variable wake_;
    std::deque<Pending> incoming_;
    std::deque<std::function<void(Scheduler&)>> ops_;
    std::vector<std::shared_ptr<RequestHandle>> in_flight_;  // for cancel-on-shutdown
    bool stopping_ = false;
    bool cancel_all_ = false;
    std::atomic<uint64_t> next_id_{1};
    SchedulerStats snapshot_;
    std::thread thread_;
};

}  // namespace lazyattn::engine
