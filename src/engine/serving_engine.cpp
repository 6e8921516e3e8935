#include "engine/serving_engine.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <set>

#include "core/timer.h"
#include "engine/reuse/conditioning.h"

namespace lazyattn::engine {
namespace {

// How often a stuck inference thread looks again (for cancellations): a poll, not a spin.
constexpr std::chrono::milliseconds kStuckPoll(100);
// How often precompute() asks whether its caller is still there while the document computes.
constexpr int kCancelPollMs = 50;
// Document lists (list_documents): republished this soon after a new document, and this often
// in any case (uses and evictions change them without a version change).
constexpr double kDocumentsFreshMs = 20;
constexpr double kDocumentsRefreshMs = 500;

// Waits for a request that generates nothing (its only event is its end), cancelling it once
// `cancelled` says so (polled as a completion polls its client).
RagResult wait_polling(RequestHandle& handle, const std::function<bool()>& cancelled) {
    if (cancelled) {
        while (!handle.finished()) {
            if (handle.next_event(kCancelPollMs).has_value()) continue;
            if (!handle.cancel_requested() && cancelled()) handle.cancel();
        }
    }
    return handle.wait();
}

// Whether `store` holds document `d` of `tenant` as precompute would make it: plain (k = 0), or
// conditioned on the k neighbours the tenant's index gives now (a copy on other neighbours is
// another entry; one on fewer than k is never stored).
bool stored_as_asked(const Scheduler& s, const KvStoreAdapter& entries, store::SegmentStore& store,
                     const std::string& tenant, const std::vector<int32_t>& d, int32_t k) {
    if (k <= 0) return store.contains(entries.key(tenant, d));
    const ConditioningPrefix prefix = conditioning_prefix(s.neighbour_index(), tenant, d, k);
    return !prefix.short_of_neighbours && store.contains(entries.key(tenant, d, prefix.key));
}

}  // namespace

RagRequest documents_only_request(std::string tenant, std::vector<std::vector<int32_t>> documents, int32_t neighbours) {
    RagRequest r;
    r.tenant = std::move(tenant);
    r.segments = std::move(documents);
    if (!r.segments.empty() && !r.segments.front().empty()) r.tail = {r.segments.front().front()};
    r.max_tokens = 0;
    r.ignore_eos = true;
    r.reuse.neighbours = neighbours;
    return r;
}

ServingEngine::ServingEngine(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config)
    : core_(model, tokenizer, config), scheduler_(core_.scheduler()) {
    snapshot_ = scheduler_.stats();
    store_ = core_.kv_store().store();
    // Before a finished request's answer is delivered: its documents are listed once it returns.
    scheduler_.set_documents_listener([this] { publish_documents(true); });
    thread_ = std::thread([this] { loop(); });
}

Expected<std::unique_ptr<ServingEngine>> ServingEngine::create(model::Model& model,
                                                               const tokenizer::Tokenizer& tokenizer,
                                                               const EngineConfig& config) {
    LA_RETURN_IF_ERROR(config.validate());
    auto engine = std::make_unique<ServingEngine>(model, tokenizer, config);
    LA_RETURN_IF_ERROR(engine->status());
    return engine;
}

ServingEngine::~ServingEngine() { shutdown(true); }

Expected<std::shared_ptr<RequestHandle>> ServingEngine::submit(RagRequest request, RequestHandle::Callback callback) {
    std::vector<RagRequest> one;
    one.push_back(std::move(request));
    LA_ASSIGN_OR_RETURN(auto handles, submit_group(std::move(one), callback));  // one queueing rule
    return handles.front();
}

Expected<std::vector<std::shared_ptr<RequestHandle>>> ServingEngine::submit_group(
    std::vector<RagRequest> requests, const RequestHandle::Callback& callback) {
    for (RagRequest& r : requests) {
        scheduler_.fit_default_max_tokens(r);
        LA_RETURN_IF_ERROR(core_.check_request(r));  // reads only immutable state
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status(StatusCode::kCancelled, "the engine is shutting down");
    if (int64_t(incoming_.size()) + snapshot_.num_waiting + int64_t(requests.size()) > scheduler_.config().max_queue) {
        return unavailable("the queue is full (" + std::to_string(scheduler_.config().max_queue) +
                           " waiting requests)");
    }
    if (!has_work_ && !requests.empty()) {  // the progress clock starts when work arrives
        has_work_ = true;
        last_progress_ms_ = now_ms();
    }
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (RagRequest& r : requests) {
        auto handle = std::make_shared<RequestHandle>(next_id_++, callback);
        incoming_.push_back({std::move(r), handle});
        in_flight_.push_back(handle);
        handles.push_back(std::move(handle));
    }
    wake_.notify_one();
    return handles;
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
    SchedulerStats s;
    {
        std::lock_guard<std::mutex> lock(mu_);
        s = snapshot_;
    }
    if (store_ != nullptr) s.store = store_->stats();
    return s;
}

EngineHealth ServingEngine::health() const {
    std::lock_guard<std::mutex> lock(mu_);
    EngineHealth h;
    h.has_work = has_work_;
    h.ms_since_progress = has_work_ ? now_ms() - last_progress_ms_ : 0.0;
    h.num_waiting = snapshot_.num_waiting + int32_t(incoming_.size());
    // The snapshot is taken after each step, but a request that finished in that step may have
    // answered its client already: count only requests still unfinished, so a client that reads
    // /metrics right after its answer never sees itself running.
    int32_t unfinished = 0;
    for (const auto& handle : in_flight_) unfinished += handle->finished() ? 0 : 1;
    h.num_running = std::max(0, std::min(snapshot_.num_running, unfinished - h.num_waiting));
    return h;
}

void ServingEngine::run_on_engine_thread(std::function<void(Scheduler&)> fn) {
    std::promise<void> done;
    auto future = done.get_future();
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (!thread_.joinable() || (stopping_ && scheduler_.idle() && incoming_.empty())) {
            fn(scheduler_);  // the engine thread is gone: nothing else touches the scheduler
            publish_documents(true);
            return;
        }
        ops_.push_back([&](Scheduler& s) {
            fn(s);
            publish_documents(true);  // a pin or unpin shows in list_documents() once it returns
            done.set_value();
        });
    }
    wake_.notify_one();
    future.wait();
}

Expected<DocumentInfo> ServingEngine::pin_document(const std::string& tenant, std::vector<int32_t> tokens,
                                                   const std::function<bool()>& cancelled) {
    Expected<DocumentInfo> result = internal_error("not run");
    run_on_engine_thread([&](Scheduler& s) { result = s.documents().pin(tenant, tokens); });
    if (result.ok() || result.status().code() != StatusCode::kNotFound) return result;
    // Not cached yet: computed by the one precompute path, then pinned.
    LA_ASSIGN_OR_RETURN(const PrecomputeReport report, precompute(tenant, {tokens}, {}, cancelled));
    if (report.outcomes.front() == PrecomputeOutcome::kTooLong) {
        return out_of_range("the document has " + std::to_string(tokens.size()) + " tokens; the context length is " +
                            std::to_string(context_length()));
    }
    run_on_engine_thread([&](Scheduler& s) { result = s.documents().pin(tenant, tokens); });
    return result;
}

Expected<PrecomputeReport> ServingEngine::precompute(const std::string& tenant,
                                                     std::vector<std::vector<int32_t>> documents,
                                                     const PrecomputeSettings& settings,
                                                     const std::function<bool()>& cancelled) {
    PrecomputeReport report;
    report.outcomes.assign(documents.size(), PrecomputeOutcome::kComputed);
    report.documents.resize(documents.size());
    DocumentReuse reuse;
    reuse.neighbours = settings.neighbours;
    const auto cost = [&reuse](const std::vector<int32_t>& d) {
        return int64_t(d.size()) + reuse.max_conditioning_tokens(int64_t(d.size()));
    };
    const int64_t budget = max_document_tokens();  // a batch, as a document, fits one context with its tail
    // Which documents to compute, decided in one trip to the engine thread.
    run_on_engine_thread([&](Scheduler& s) {
        // Conditioned copies: every document's neighbours come from the whole list, indexed first.
        if (settings.neighbours > 0) s.index_documents(tenant, documents);
        const KvStoreAdapter& entries = core_.kv_store();
        store::SegmentStore* store = settings.skip_stored ? store_ : nullptr;
        std::set<std::string> seen;
        for (size_t i = 0; i < documents.size(); ++i) {
            const std::vector<int32_t>& d = documents[i];
            report.documents[i].id = s.documents().id(tenant, d);
            report.documents[i].num_tokens = int32_t(d.size());
            PrecomputeOutcome& out = report.outcomes[i];
            if (d.empty()) {
                out = PrecomputeOutcome::kEmpty;
            } else if (cost(d) > budget) {
                out = PrecomputeOutcome::kTooLong;
            } else if (!seen.insert(report.documents[i].id).second) {
                out = PrecomputeOutcome::kDuplicate;
            } else if (store != nullptr && stored_as_asked(s, entries, *store, tenant, d, settings.neighbours)) {
                out = PrecomputeOutcome::kStored;
            }
        }
    });
    std::vector<std::vector<int32_t>> batch;
    int64_t batch_tokens = 0;
    auto run_batch = [&](int64_t documents_done) -> Status {
        if (batch.empty()) return {};
        LA_ASSIGN_OR_RETURN(auto handle, submit(documents_only_request(tenant, std::move(batch), settings.neighbours)));
        batch.clear();
        batch_tokens = 0;
        const RagResult done = wait_polling(*handle, cancelled);
        if (done.finish_reason == FinishReason::kError) return done.status;
        if (done.finish_reason == FinishReason::kCancelled)
            return Status{StatusCode::kCancelled, "cancelled while it was computed"};
        // Between steps: the batch's entries were handed to the store's writer by then.
        if (settings.flush_store && store_ != nullptr) run_on_engine_thread([this](Scheduler&) { store_->flush(); });
        if (settings.progress) settings.progress(documents_done);
        return {};
    };
    for (size_t i = 0; i < documents.size(); ++i) {
        switch (report.outcomes[i]) {
            case PrecomputeOutcome::kStored:
                ++report.stored;
                continue;
            case PrecomputeOutcome::kDuplicate:
                ++report.duplicates;
                continue;
            case PrecomputeOutcome::kTooLong:
                ++report.too_long;
                continue;
            case PrecomputeOutcome::kEmpty:
                continue;
            case PrecomputeOutcome::kComputed:
                break;
        }
        const int64_t c = cost(documents[i]);
        if (batch_tokens + c > budget || int32_t(batch.size()) >= settings.batch_docs) {
            LA_RETURN_IF_ERROR(run_batch(int64_t(i)));
        }
        batch_tokens += c;
        ++report.computed;
        report.tokens_computed += int64_t(documents[i].size());
        batch.push_back(std::move(documents[i]));
    }
    LA_RETURN_IF_ERROR(run_batch(int64_t(documents.size())));
    // As the documents stand now (listed ones: plain copies still cached).
    run_on_engine_thread([&](Scheduler& s) {
        std::map<std::string, DocumentInfo> listed;
        for (DocumentInfo& d : s.documents().list(tenant)) listed.emplace(d.id, std::move(d));
        for (DocumentInfo& d : report.documents) {
            if (auto it = listed.find(d.id); it != listed.end()) d = it->second;
        }
    });
    return report;
}

Status ServingEngine::unpin_document(const std::string& tenant, const std::string& id) {
    Status st;
    run_on_engine_thread([&](Scheduler& s) { st = s.documents().unpin(tenant, id); });
    return st;
}

std::vector<DocumentInfo> ServingEngine::list_documents(const std::string& tenant) const {
    std::lock_guard<std::mutex> lock(documents_mu_);
    auto it = documents_.find(tenant);
    return it == documents_.end() ? std::vector<DocumentInfo>{} : it->second;
}

void ServingEngine::publish_documents(bool force) {
    const double now = now_ms();
    const bool changed = scheduler_.documents().version() != documents_version_;
    const double age = now - documents_published_ms_;
    if (!force && age < kDocumentsRefreshMs && !(changed && (age >= kDocumentsFreshMs || scheduler_.idle()))) return;
    auto lists = scheduler_.documents().list_all();
    documents_version_ = scheduler_.documents().version();
    documents_published_ms_ = now;
    std::lock_guard<std::mutex> lock(documents_mu_);
    documents_.swap(lists);
}

std::optional<std::vector<int32_t>> ServingEngine::document_tokens(const std::string& tenant, const std::string& id) {
    std::optional<std::vector<int32_t>> out;
    run_on_engine_thread([&](Scheduler& s) { out = s.documents().tokens(tenant, id); });
    return out;
}

void ServingEngine::loop() {
    bool stuck = false;  // the last step moved nothing although work is queued
    for (;;) {
        std::deque<Pending> fresh;
        std::deque<std::function<void(Scheduler&)>> ops;
        {
            std::unique_lock<std::mutex> lock(mu_);
            auto ready = [&] {
                return !incoming_.empty() || !ops_.empty() || stopping_ ||
                       (!stuck && (!scheduler_.idle() || scheduler_.has_background_work()));
            };
            if (stuck) {
                wake_.wait_for(lock, kStuckPoll, ready);
            } else {
                wake_.wait(lock, ready);
            }
            fresh.swap(incoming_);
            ops.swap(ops_);
            in_flight_.erase(
                std::remove_if(in_flight_.begin(), in_flight_.end(), [](const auto& h) { return h->finished(); }),
                in_flight_.end());
            if (stopping_ && fresh.empty() && ops.empty() && scheduler_.idle()) return;
            if (stopping_ && stuck) {  // work that cannot move would keep shutdown waiting forever
                for (auto& h : in_flight_) h->cancel();
            }
        }
        for (auto& op : ops) op(scheduler_);
        for (Pending& p : fresh) {
            auto handle = p.handle;
            const Status st = core_.enqueue(std::move(p.request), handle);
            if (!st.ok()) handle->finish(FinishReason::kError, {}, st);
        }
        const bool progressed = core_.step();
        // Background work that cannot move (no room in the pool) is polled as stuck work is.
        stuck = !progressed && (!scheduler_.idle() || scheduler_.has_background_work());
        publish_documents(false);
        const SchedulerStats s = scheduler_.stats();
        std::lock_guard<std::mutex> lock(mu_);
        snapshot_ = s;
        if (progressed) last_progress_ms_ = now_ms();
        has_work_ = !scheduler_.idle() || !incoming_.empty();
    }
}

}  // namespace lazyattn::engine
