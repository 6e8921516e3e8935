// Scheduler: the engine's policy (vLLM v1's Scheduler): continuous batching over one paged KV
// cache, with segments as first-class work. schedule() forms one step under a token budget:
// first one decode row per running request, then prefill chunks in first-come order with no
// item over half the budget, from segment jobs (a missing document computed once for every
// request that needs it, as its own sequence from position 0) and requests whose segments are
// ready (each its first unfinished prefill phase). The ModelRunner lays out and runs that
// SchedulerOutput; update() advances the requests' phases and returns the sampled tokens, which
// EngineCore::step gives to the OutputProcessor (finish_request() ends those it says are done).
// Admission allocates only once it
// knows everything fits. When blocks run out, cached blocks nobody uses are evicted first (least
// recently freed); if a step still does not fit, the most recently admitted request is
// preempted (its blocks freed, requeued for recompute). A request that could not fit even in the
// pool's unpinned blocks is refused when added, and a queued one whose room later went to pins
// is failed, so nothing waits forever.
//
// It sees no weights and no text: the model is ModelFacts, the pool's memory is touched only to
// move blocks to and from the persistent store. Single-threaded: one thread calls enqueue(),
// schedule() and update() (EngineCore::step()).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/documents/document_registry.h"
#include "engine/engine_config.h"
#include "engine/request/request_handle.h"
#include "engine/reuse/neighbour_index.h"
#include "engine/scheduler/background_conditioning.h"
#include "engine/scheduler/kv_manager.h"
#include "engine/scheduler_output.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {

struct SchedulerStats {
    int64_t steps = 0;
    int64_t preemptions = 0;
    int64_t segment_jobs = 0;  // missing segments computed (shared jobs count once)
    int64_t segment_hits = 0;
    int64_t segment_misses = 0;
    int64_t segment_store_hits = 0;  // of the hits, loaded from a --kv-store tier (all tiers)
    int64_t prompt_tokens_computed = 0;
    int64_t segment_job_tokens = 0;  // of those, computed by segment jobs (documents)
    int64_t prompt_tokens_reused = 0;
    int64_t requests_finished = 0;
    int64_t requests_cancelled = 0;
    int64_t requests_failed = 0;
    int32_t num_waiting = 0;
    int32_t num_running = 0;
    int32_t blocks_total = 0;
    int32_t blocks_used = 0;                // referenced by requests or jobs
    int32_t blocks_cached_free = 0;         // unreferenced, still holding reusable content
    int32_t blocks_free = 0;                // all unreferenced blocks (cached ones included)
    int32_t blocks_pinned = 0;              // held by pinned documents
    std::map<int32_t, int64_t> batch_rows;  // histogram: rows per step (bucketed to powers of 2)
    store::StoreStats store;                // per --kv-store tier (empty without a store)
    // Where step time goes: forward steps by what they carried (decode rows only, prefill rows
    // only, or both), their rows and their forward time. A decode row in a mixed step waits for
    // the step's prefill rows, so mixed steps' time is what running requests' TPOT pays.
    struct StepKind {
        int64_t steps = 0;
        int64_t decode_rows = 0;
        int64_t prefill_rows = 0;
        double forward_ms = 0;
    };
    StepKind decode_only, prefill_only, mixed;
    // Conditioned copies (neighbours=K@ready): documents looked up, and of those served by their
    // conditioned copy; the background work making the copies (background_conditioning.h).
    int64_t conditioned_lookups = 0;
    int64_t conditioned_served = 0;
    int64_t background_rows = 0;  // rows of background work computed
    BackgroundStats background;
};

// What the Scheduler knows of the model: sizes and identities, no weights.
struct ModelFacts {
    int32_t vocab_size = 0;
    int32_t context_length = 0;  // the model's
    std::string description;     // model::ModelConfig::describe(): part of every chain seed
    // The measurements (rows of the phase table, reuse/phase_kinds.h) the model and its backend
    // can run, one bit per PhaseKind (supported_measurements): a request selecting its
    // recomputed rows by another is refused.
    uint32_t measurements = 0;
    bool runs(PhaseKind kind) const { return (measurements >> kind.row) & 1u; }
    void allow(PhaseKind kind) { measurements |= 1u << kind.row; }
};

class Scheduler {
public:
    // Plans over `kv_memory`'s blocks (the ModelRunner's pool; an empty one refuses everything);
    // computed documents go to `store` (EngineCore's persistent store; null: none).
    Scheduler(const ModelFacts& model, backend::KvMemory& kv_memory, const EngineConfig& config,
              KvStoreAdapter* store = nullptr);

    // The checks of enqueue() that need no queue state (malformed, longer than the context,
    // larger than the pool's unpinned blocks); safe to call from any thread.
    Status check_request(const RagRequest& request) const;
    // A server-default max_tokens (max_tokens_is_default) that cannot fit the pool's unpinned
    // blocks is lowered to the most that fits; any thread, as check_request.
    void fit_default_max_tokens(RagRequest& request) const;
    // Queues a request already checked with check_request(), under a caller-made handle;
    // refused (never queued) when the queue is full.
    Status enqueue(RagRequest request, std::shared_ptr<RequestHandle> handle, bool want_all_tail_logits = false);

    // What the next step runs: cancellations reaped, admissions and preemptions made, rows
    // planned. progressed says whether anything moved; empty() outputs need no runner.
    SchedulerOutput schedule();
    // Applies what the runner computed for `out` (the last schedule()'s): phases advanced,
    // measurements turned into chosen rows, published blocks, prompt logprobs, sampled tokens
    // counted (and queued to be computed next step). Returns those tokens, in chunk order, for
    // the OutputProcessor; they point into `ran`, which must outlive their use.
    std::vector<StepToken> update(const SchedulerOutput& out, ModelRunnerOutput& ran);
    // Ends a running request with the OutputProcessor's reason (stop or length).
    void finish_request(SequenceState& s, FinishReason reason) { finish(s, reason); }
    // The step's last call: finished requests dropped, integrity checked when configured.
    void end_step();
    bool idle() const { return waiting_.empty() && running_.empty(); }
    // Background work queued or running (conditioned copies to make): the engine keeps stepping
    // for it when idle, but never waits for it to stop.
    bool has_background_work() const { return background_job_ >= 0 || background_.has_queued(); }

    SchedulerStats stats() const;

    // Documents (segment cache modes only), per tenant, with their pins and quotas: the
    // registry (documents/document_registry.h). Engine thread only, as every scheduler call.
    DocumentRegistry& documents() { return documents_; }
    const DocumentRegistry& documents() const { return documents_; }
    // Called (on the stepping thread) before a request's result is delivered whenever the
    // documents changed since DocumentRegistry::version() was last seen by the listener: so a
    // client that got its answer finds the request's documents in a list published from the
    // listener.
    void set_documents_listener(std::function<void()> listener) { documents_listener_ = std::move(listener); }
    // Adds documents to the corpus neighbour-conditioned documents of `tenant` are encoded
    // against (DocumentReuse::neighbours; a request that conditions adds its own when admitted);
    // engine thread only, as every scheduler call.
    void index_documents(const std::string& tenant, std::span<const std::vector<int32_t>> documents);
    // That corpus: a conditioned copy's neighbours, hence its key (reuse/conditioning.h), come from it.
    const NeighbourIndex& neighbour_index() const { return neighbours_; }

    const SequenceState* find(uint64_t id) const;
    // Where every request's KV lives (its pool's bookkeeping: kv().kv_cache()).
    const KvManager& kv() const { return kv_; }
    const EngineConfig& config() const { return config_; }
    // The context length requests may use: the model's, or EngineConfig::max_model_len below it.
    int32_t context_length() const {
        const int32_t model_ctx = model_.context_length;
        return config_.max_model_len > 0 ? std::min(config_.max_model_len, model_ctx) : model_ctx;
    }
    int64_t num_steps() const { return step_count_; }
    // Pool, cache index and every reference held by requests, jobs and pins agree.
    void check_integrity() const;

private:
    Status validate(const RagRequest& r) const;
    // Whether r fits the blocks no document pins, alone (its tenant's pinned documents counted
    // as present, the worst case of block_budget.h); any thread (reads the pool's size and the
    // pin ledger only).
    Status check_fits(const RagRequest& r, const ChainSeeds& seeds) const;
    // Admission (scheduler_admission.cpp): placed by the KvManager, then counted.
    bool try_admit(SequenceState& s);

    // Steps (scheduler_step.cpp, scheduler_plan.cpp).
    bool admit_waiting();
    bool fail_unfittable();
    bool reap_cancelled();
    void make_decode_room();
    void make_block_attn_copies();
    SchedulerOutput plan_step();
    // Plans requests' and their jobs' prefill; returns the budget left.
    int32_t plan_prefill(SchedulerOutput& plan, int32_t budget);
    PhaseChunk tail_chunk(SequenceState& s, int32_t begin, int32_t end, bool all_logits) const;
    bool preempt_for(SequenceState* requester);
    // Background work (scheduler_background.cpp): the documents a request read plain counted,
    // the next task's job started when no request waits, its rows planned from the budget left,
    // its end recorded, and the job cancelled (its task queued again) when a request needs room.
    void note_background(const SequenceState& s);
    // neighbours@ready: which copies a request reads is decided once, at the first admission of
    // it or of a sibling choice (RagRequest::conditioning_pinned): before s is placed it takes a
    // decided sibling's decision; once placed, its decision is pinned and handed to the siblings
    // still waiting.
    void adopt_conditioning(SequenceState& s);
    void pin_conditioning(SequenceState& s);
    bool start_background();
    void plan_background(SchedulerOutput& plan, int32_t budget);
    void on_background_done();
    bool cancel_background();
    void preempt(SequenceState& s);
    void on_job_progress(int64_t job_id, int32_t n);
    void finish(SequenceState& s, FinishReason reason, Status status = {});
    void drop_finished();
    // A chunk of a phase before the tail ran: what it measured is recorded (its kind's record
    // hook), its phase advanced and, once a measurement is complete, the recomputed rows chosen.
    void on_recompute(const PhaseChunk& c, const std::vector<float>& measured);
    // A tail chunk ran: logits and prompt logprobs kept, the prompt's end published, the sampled
    // token counted; returns the token for the OutputProcessor, if any.
    std::optional<StepToken> on_tail(const PhaseChunk& c, ChunkResult& r);

    int32_t vocab_size() const { return model_.vocab_size; }

    ModelFacts model_;
    EngineConfig config_;
    KvStoreAdapter* store_;       // EngineCore's; null: none
    KvManager kv_;                // where every request's KV lives
    DocumentRegistry documents_;  // on kv_'s pool, with its seeds and store
    NeighbourIndex neighbours_;   // the corpora conditioned documents are encoded against
    BackgroundConditioning background_;
    // The running background task and its job (-1: none), with what its copy was encoded after.
    std::optional<BackgroundTask> background_task_;
    int64_t background_job_ = -1;
    ConditionedCopyInfo background_copy_;

    uint64_t next_admit_order_ = 1;
    int64_t step_count_ = 0;
    uint64_t checked_pin_version_ = 0;
    std::deque<std::unique_ptr<SequenceState>> waiting_;
    std::vector<std::unique_ptr<SequenceState>> running_;  // admitted, in admission order
    SchedulerStats stats_;
    uint64_t documents_version_heard_ = 0;  // the last version the listener was called with
    std::function<void()> documents_listener_;
};

}  // namespace lazyattn::engine
