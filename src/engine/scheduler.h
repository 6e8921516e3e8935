// Scheduler: the engine's policy (vLLM v1's Scheduler): continuous batching over one paged KV
// cache, with segments as first-class work. schedule() forms one step under a token budget:
// first one decode row per running request, then prefill chunks in first-come order with no
// item over half the budget, from segment jobs (a missing document computed once for every
// request that needs it, as its own sequence from position 0) and prompt tails whose segments
// are ready. The ModelRunner runs that SchedulerOutput; update() advances requests by token
// counters and hands sampled tokens to the OutputProcessor. Admission allocates only once it
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
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/kv_memory.h"
#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/pin_ledger.h"
#include "engine/request_handle.h"
#include "engine/sequence_state.h"
#include "kv/kv_cache.h"
#include "engine/scheduler_output.h"
#include "store/segment_store.h"

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
};

// A document (segment) the cache knows, as GET /v1/documents lists it.
struct DocumentInfo {
    std::string id;  // hex of a keyed hash of the segment's chain (model, KV variant, tenant)
    int32_t num_tokens = 0;
    bool pinned = false;
    int32_t pin_count = 0;    // pins held by its tenant; each needs an unpin
    double last_used_ms = 0;  // steady-clock milliseconds of the last request that read it
};

class OutputProcessor;

// What the Scheduler knows of the model: sizes and identities, no weights.
struct ModelFacts {
    int32_t vocab_size = 0;
    int32_t context_length = 0;  // the model's
    std::string description;     // model::ModelConfig::describe(): part of every chain seed
    // Of the weights (store::model_fingerprint), when a persistent store is configured.
    store::Fingerprint fingerprint;
    double fingerprint_ms = 0;
};

class Scheduler {
public:
    // Plans over `kv_memory`'s blocks (the ModelRunner's pool; an empty one refuses everything).
    Scheduler(const ModelFacts& model, backend::KvMemory& kv_memory, const EngineConfig& config);

    // Whether construction succeeded (the persistent store opened).
    const Status& status() const { return status_; }

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
    // Applies what the runner computed for `out` (the last schedule()'s): counters, published
    // blocks, prompt logprobs, sampled tokens through `outputs`, finished requests.
    void update(const SchedulerOutput& out, const ModelRunnerOutput& ran, OutputProcessor& outputs);
    bool idle() const { return waiting_.empty() && running_.empty(); }

    SchedulerStats stats() const;

    // Documents (segment cache modes only), per tenant: a tenant sees, reuses and pins only its
    // own. pin_document() holds a reference on every block of a cached document so it is never
    // evicted; pins count per tenant (two pins need two unpins). The document must be cached
    // already (kNotFound otherwise: run a request containing it first); a pin beyond
    // max_pinned_fraction of the pool or the tenant's quota is kResourceExhausted. Unknown ids,
    // and ids of other tenants, give kNotFound.
    std::string document_id(const std::string& tenant, const std::vector<int32_t>& tokens) const;
    Expected<DocumentInfo> pin_document(const std::string& tenant, const std::vector<int32_t>& tokens);
    Status unpin_document(const std::string& tenant, const std::string& id);
    // The tenant's documents still cached (pinned or not), most recently used first.
    std::vector<DocumentInfo> list_documents(const std::string& tenant);
    // Every tenant's, as list_documents gives them (what ServingEngine publishes between steps).
    std::map<std::string, std::vector<DocumentInfo>> list_all_documents();
    // Changes when a document is first registered, pinned or unpinned (not when one is merely
    // used or evicted).
    uint64_t documents_version() const { return documents_version_; }
    // Called (on the stepping thread) before a request's result is delivered whenever the
    // documents changed since documents_version() was last seen by the listener: so a client
    // that got its answer finds the request's documents in a list published from the listener.
    void set_documents_listener(std::function<void()> listener) { documents_listener_ = std::move(listener); }
    // The tokens of a known cached document of the tenant (a request may name it by id alone).
    std::optional<std::vector<int32_t>> document_tokens(const std::string& tenant, const std::string& id) const;
    int32_t num_pinned_blocks() const { return pins_.num_pinned(); }
    // The persistent store (--kv-store; null without one) and the store key of a document of a
    // tenant (what `lazyattn precompute` checks before computing it).
    store::SegmentStore* segment_store() { return store_.get(); }
    std::string store_key(const std::string& tenant, const std::vector<int32_t>& tokens) const;

    const SequenceState* find(uint64_t id) const;
    const kv::KvCache& kv_cache() const { return kv_; }
    // The pool's memory, the backend's (every operation on it goes through the backend; a
    // persistent store moves blocks with read_block / write_block).
    backend::KvMemory& kv_memory() { return kv_memory_; }
    const EngineConfig& config() const { return config_; }
    // The context length requests may use: the model's, or EngineConfig::max_model_len below it.
    int32_t context_length() const {
        const int32_t model_ctx = model_.context_length;
        return config_.max_model_len > 0 ? std::min(config_.max_model_len, model_ctx) : model_ctx;
    }
    int64_t num_steps() const { return step_count_; }
    // Documents the registry remembers, over every tenant (bounded: see prune_documents()).
    int64_t num_registered_documents() const { return num_document_entries_; }
    // Pool, cache index and every reference held by requests, jobs and pins agree.
    void check_integrity() const;

private:
    Status validate(const RagRequest& r) const;
    int64_t blocks_needed(const RagRequest& r) const;
    // Whether the request fits the blocks no document pins (its own pinned documents counted
    // as present); thread-safe.
    Status check_fits(const RagRequest& r, const ChainSeeds& seeds) const;
    ChainSeeds seeds_for(const std::string& tenant) const;

    // Admission (scheduler_admission.cpp).
    bool try_admit(SequenceState& s);
    void match_segments(SequenceState& s, std::vector<size_t>* needs_job);
    void start_jobs(SequenceState& s, const std::vector<size_t>& needs_job);
    void match_tail(SequenceState& s);
    // Private blocks for the document tokens the request recomputes (DocumentReuse).
    void start_patches(SequenceState& s);
    int64_t fresh_blocks_needed(const SequenceState& s, const std::vector<size_t>& needs_job) const;
    Status materialize_copies(SequenceState& s);
    void release_kv(SequenceState& s);
    int64_t find_job(const kv::BlockHash& seed, const std::vector<int32_t>& tokens) const;
    // The chain seed segment d of s is cached under (its placement's logical_start set).
    kv::BlockHash segment_seed(const SequenceState& s, size_t d) const;
    // The seed of s's tail chain: the segment list and how the tail reads it.
    kv::BlockHash tail_seed(const SequenceState& s) const;
    // Ends a job nobody needs any more (its blocks released; its anchor job loses a user).
    void drop_job(int64_t job_id);
    bool ensure_tail_capacity(SequenceState& s, int32_t num_tokens);

    // Steps (scheduler_step.cpp, scheduler_plan.cpp).
    bool admit_waiting();
    bool fail_unfittable();
    bool reap_cancelled();
    void make_decode_room();
    void make_block_attn_copies();
    SchedulerOutput plan_step();
    void plan_prefill(SchedulerOutput& plan, int32_t budget);
    TailChunk tail_chunk(SequenceState& s, int32_t begin, int32_t end, bool all_logits) const;
    bool preempt_for(SequenceState* requester);
    void preempt(SequenceState& s);
    void on_job_progress(int64_t job_id, int32_t n);
    void finish(SequenceState& s, const std::string& reason, Status status = {});
    void drop_finished();
    void add_tail_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end, bool all_logits);
    // Rows [begin, end) of s's recomputed document tokens (all documents' in order), no logits.
    void add_patch_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end);
    // The spans of s's segments as its tail and patch rows read them.
    void add_segment_spans(model::ForwardBatch& b, const SequenceState& s);

    // The persistent store (scheduler_store.cpp).
    Status open_store();
    // Whether segment d of s may come from or go to the store (a plain document).
    bool segment_storable(const SequenceState& s, size_t d) const;
    // On a pool miss: imports segment d from the first tier holding it into its blocks (the
    // first num_present already cached) and publishes them; false when no tier has it.
    bool load_segment(SequenceState& s, size_t d, int32_t num_present);
    // Hands a computed segment to the store's writer thread (a copy of its blocks).
    void store_segment(uint64_t variant, const std::vector<int32_t>& tokens, const std::vector<kv::BlockId>& blocks);

    // Documents (scheduler_documents.cpp).
    struct DocumentEntry {
        std::vector<int32_t> tokens;
        kv::BlockHash chain_end;                 // names it in the pin ledger
        std::vector<kv::BlockId> pinned_blocks;  // one reference each while pin_count > 0
        int32_t pin_count = 0;
        double last_used_ms = 0;
    };
    void note_documents(const SequenceState& s);
    // Forgets unpinned documents whose blocks were evicted. Run when the registry holds twice as
    // many entries as the pool has blocks (each cached document ends in a block of its own), so
    // the registry stays O(pool) however many distinct documents and tenants clients send.
    void prune_documents();
    Status check_pin_room(const std::string& tenant, int32_t num_new) const;
    DocumentInfo info(const std::string& id, const DocumentEntry& e) const;

    int32_t vocab_size() const { return model_.vocab_size; }

    ModelFacts model_;
    EngineConfig config_;
    Status status_;
    backend::KvMemory& kv_memory_;  // the runner's; read and written only by the store
    kv::KvCache kv_;                // its bookkeeping (kv_memory_'s shape)
    // Block-attn copies planned since the last forward, with the request each serves (dropped
    // when that request releases its blocks); the next step's plan carries them.
    std::vector<std::pair<uint64_t, model::KvBlockCopy>> pending_copies_;
    PinLedger pins_;
    kv::BlockHash segment_seed_, tail_seed_, prefix_seed_;  // keyed; salted per tenant

    uint64_t next_admit_order_ = 1;
    int64_t step_count_ = 0;
    uint64_t checked_pin_version_ = 0;
    std::deque<std::unique_ptr<SequenceState>> waiting_;
    std::vector<std::unique_ptr<SequenceState>> running_;  // admitted, in admission order
    std::map<int64_t, SegmentJob> jobs_;                   // ordered: oldest job first
    int64_t next_job_id_ = 0;
    SchedulerStats stats_;
    std::map<std::string, std::map<std::string, DocumentEntry>> documents_;  // tenant -> id -> entry
    uint64_t documents_version_ = 0;
    uint64_t documents_version_heard_ = 0;  // the last version the listener was called with
    std::function<void()> documents_listener_;
    int64_t num_document_entries_ = 0;            // over every tenant; bounded by prune_documents()
    std::unique_ptr<store::SegmentStore> store_;  // null without --kv-store
};

}  // namespace lazyattn::engine
