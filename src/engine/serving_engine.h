// ServingEngine: the multi-threaded face of the EngineCore. submit() and cancel() may be called
// from any number of threads; one inference thread owns the scheduler (and so the KV pool) and
// runs steps while they make progress, sleeping otherwise (until new work, an operation, or a
// short poll for cancellations when queued work is stuck). Requests that can never run are
// refused by submit() itself, so callers get the error at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/engine_core.h"

namespace lazyattn::engine {

// Whether the inference thread is moving (for a liveness probe).
struct EngineHealth {
    bool has_work = false;         // requests queued or running
    double ms_since_progress = 0;  // since the last step that advanced a request, or since work
                                   // arrived when none has since; 0 without work
    int32_t num_waiting = 0;
    int32_t num_running = 0;
};

// How precompute() computes a list of documents.
struct PrecomputeSettings {
    // K > 0: each document's copy conditioned on its K most similar documents of the list
    // (DocumentReuse::neighbours; the whole list is indexed first) instead of its plain copy.
    int32_t neighbours = 0;
    int32_t batch_docs = 16;   // documents per engine request (computed as parallel segment jobs)
    bool skip_stored = false;  // a document whose entry a --kv-store tier holds is not computed
    bool flush_store = false;  // each batch's entries are written before the next batch is queued
    std::function<void(int64_t documents_done)> progress;  // after each batch (on the caller's thread)
};

// What precompute() did with one document.
enum class PrecomputeOutcome { kComputed, kStored, kDuplicate, kTooLong, kEmpty };

struct PrecomputeReport {
    std::vector<PrecomputeOutcome> outcomes;  // one per document, in order
    // One per document, as it stands after the call (unpinned unless pinned before; a document
    // not computed, or evicted since, has only its id and num_tokens).
    std::vector<DocumentInfo> documents;
    int64_t computed = 0, stored = 0, duplicates = 0, too_long = 0, tokens_computed = 0;
};

// The request that computes `documents` of `tenant` as segments and generates nothing (one tail
// token: the segments are the work): precompute(), and the benchmarks' prewarming.
RagRequest documents_only_request(std::string tenant, std::vector<std::vector<int32_t>> documents,
                                  int32_t neighbours = 0);

class ServingEngine {
public:
    using EngineHealth = engine::EngineHealth;

    // The constructor never throws: a KV pool that cannot be allocated leaves status() not ok
    // (and every submit() refused with it). create() is the checked form.
    ServingEngine(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config);
    static Expected<std::unique_ptr<ServingEngine>> create(model::Model& model, const tokenizer::Tokenizer& tokenizer,
                                                           const EngineConfig& config);
    ~ServingEngine();
    ServingEngine(const ServingEngine&) = delete;
    ServingEngine& operator=(const ServingEngine&) = delete;

    const Status& status() const { return core_.status(); }

    // Thread-safe. kInvalidArgument / kOutOfRange for a bad request, kResourceExhausted when it
    // can never fit (the pool's unpinned blocks are too few), kUnavailable when the queue is
    // full, kCancelled after shutdown began.
    Expected<std::shared_ptr<RequestHandle>> submit(RagRequest request, RequestHandle::Callback callback = {});
    // The choices of one request (OpenAI's `n`), queued together or not at all, so the engine
    // thread takes them in one step: siblings admitted together share their recomputed rows
    // (RagRequest::choice_group) instead of racing a leader that finishes first.
    Expected<std::vector<std::shared_ptr<RequestHandle>>> submit_group(std::vector<RagRequest> requests,
                                                                       const RequestHandle::Callback& callback = {});
    // Stops accepting; finishes in-flight requests (or cancels them) and joins the thread.
    void shutdown(bool cancel_in_flight);

    // A snapshot taken after the latest step (thread-safe).
    SchedulerStats stats() const;
    EngineHealth health() const;  // thread-safe

    // Documents of one tenant (thread-safe; each runs on the inference thread between steps).
    // pin_document() computes the document if it is not cached yet, then pins it (counted: each
    // pin needs an unpin); kResourceExhausted when the pin would pass the pinned-share cap or the
    // tenant's quota. Another tenant's id is kNotFound. `cancelled` (polled while the document
    // computes) true: the computation is cancelled and kCancelled returned, nothing pinned.
    Expected<DocumentInfo> pin_document(const std::string& tenant, std::vector<int32_t> tokens,
                                        const std::function<bool()>& cancelled = {});
    // The one precompute path (`lazyattn precompute`, POST /v1/documents' compute-only batches,
    // Python's precompute()): computes `documents` (segment tokens, engine::document_tokens) into
    // the cache and the --kv-store tiers without pinning them, as few documents-only requests
    // through the ordinary queue as the context allows (each at most settings.batch_docs
    // documents). Empty documents, repeats and documents longer than the context (with their
    // conditioning) are skipped, as are stored ones under settings.skip_stored. An error stops
    // at the batch that failed (earlier batches stay cached); `cancelled` true (polled while a
    // batch computes): that batch is cancelled and kCancelled returned.
    Expected<PrecomputeReport> precompute(const std::string& tenant, std::vector<std::vector<int32_t>> documents,
                                          const PrecomputeSettings& settings = {},
                                          const std::function<bool()>& cancelled = {});
    Status unpin_document(const std::string& tenant, const std::string& id);
    // list_documents() never waits for the inference thread (it serves GET /v1/documents on the
    // server's light lane, beside /health): it reads the lists the thread publishes between
    // steps, at once after a pin or unpin, within kDocumentsFreshMs of a newly cached document,
    // and every kDocumentsRefreshMs for uses and evictions.
    std::vector<DocumentInfo> list_documents(const std::string& tenant) const;
    std::optional<std::vector<int32_t>> document_tokens(const std::string& tenant, const std::string& id);
    const EngineConfig& config() const { return scheduler_.config(); }
    int32_t context_length() const { return scheduler_.context_length(); }
    // The longest document precompute() and pin_document() compute: it and a one-token tail fit
    // one context.
    int32_t max_document_tokens() const { return context_length() - 2; }

private:
    struct Pending {
        RagRequest request;
        std::shared_ptr<RequestHandle> handle;
    };
    void loop();
    // On the inference thread: republishes the document lists when they changed (force: now).
    void publish_documents(bool force);
    // Runs fn(scheduler) on the inference thread and waits for it.
    void run_on_engine_thread(std::function<void(Scheduler&)> fn);

    EngineCore core_;
    Scheduler& scheduler_;  // core_'s (documents, pins and statistics are the scheduler's)
    mutable std::mutex mu_;
    std::condition_variable wake_;
    std::deque<Pending> incoming_;
    std::deque<std::function<void(Scheduler&)>> ops_;
    std::vector<std::shared_ptr<RequestHandle>> in_flight_;  // for cancel-on-shutdown
    bool stopping_ = false;
    bool cancel_all_ = false;
    std::atomic<uint64_t> next_id_{1};
    SchedulerStats snapshot_;
    // The persistent store (null without --kv-store): its writer works between steps, so its
    // statistics are read live, not from the last step's snapshot (thread-safe on its own).
    store::SegmentStore* store_ = nullptr;
    mutable std::mutex documents_mu_;
    std::map<std::string, std::vector<DocumentInfo>> documents_;  // under documents_mu_
    uint64_t documents_version_ = ~0ull;                          // inference thread only
    double documents_published_ms_ = 0;                           // inference thread only
    bool has_work_ = false;                                       // under mu_: submitted work not yet all finished
    double last_progress_ms_ = 0;                                 // under mu_
    std::thread thread_;
};

}  // namespace lazyattn::engine
