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
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/request/request_handle.h"
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
    // The backend measures attention mass (Backend::attention_mass): recompute selected by the
    // question (@query) is possible.
    bool measures_attention = false;
    // The backend measures KV deviation (Backend::kv_deviation) and the model has a layer past
    // the first: recompute selected by deviation (@deviation) is possible.
    bool measures_kv_deviation = false;
};

class Scheduler {
public:
    // Selection by the question measures attention from the prompt tail's last rows only (the
    // question ends the tail; the mass costs rows x keys per probed layer on the host).
    static constexpr int32_t kProbeMeasuredRows = 256;
    // A KV-deviation row runs one layer and a third of the next (Model::measure_kv_deviation),
    // so a step's token budget counts this many of them as one row: 8 keeps a step's work near
    // its budget on models of 12 layers and more (SmolLM2-135M has 30, where 8 is ~1/2 a row).
    static constexpr int32_t kDeviationRowsPerToken = 8;

    // Plans over `kv_memory`'s blocks (the ModelRunner's pool; an empty one refuses everything).
    Scheduler(const ModelFacts& model, backend::KvMemory& kv_memory, const EngineConfig& config);

    // Whether construction succeeded (the persistent store opened).
    const Status& status() const { return kv_.status(); }

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
    // blocks, prompt logprobs, sampled tokens through `outputs`, finished requests. The logprobs
    // in `ran` are moved into the requests (it is the step's own output, not read afterwards).
    void update(const SchedulerOutput& out, ModelRunnerOutput& ran, OutputProcessor& outputs);
    bool idle() const { return waiting_.empty() && running_.empty(); }

    SchedulerStats stats() const;

    // Documents (segment cache modes only), per tenant: a tenant sees, reuses and pins only its
    // own. pin_document() holds a reference on every block of a cached document so it is never
    // evicted; pins count per tenant (two pins need two unpins). The document must be cached
    // already (kNotFound otherwise: run a request containing it first); a pin beyond
    // max_pinned_fraction of the pool or the tenant's quota is kResourceExhausted. Unknown ids,
    // and ids of other tenants, give kNotFound.
    std::string document_id(const std::string& tenant, const std::vector<int32_t>& tokens) const {
        return kv_.document_id(tenant, tokens);
    }
    Expected<DocumentInfo> pin_document(const std::string& tenant, const std::vector<int32_t>& tokens) {
        return kv_.pin_document(tenant, tokens);
    }
    Status unpin_document(const std::string& tenant, const std::string& id) { return kv_.unpin_document(tenant, id); }
    // The tenant's documents still cached (pinned or not), most recently used first.
    std::vector<DocumentInfo> list_documents(const std::string& tenant) { return kv_.list_documents(tenant); }
    // Every tenant's, as list_documents gives them (what ServingEngine publishes between steps).
    std::map<std::string, std::vector<DocumentInfo>> list_all_documents() { return kv_.list_all_documents(); }
    // Changes when a document is first registered, pinned or unpinned (not when one is merely
    // used or evicted).
    uint64_t documents_version() const { return kv_.documents_version(); }
    // Called (on the stepping thread) before a request's result is delivered whenever the
    // documents changed since documents_version() was last seen by the listener: so a client
    // that got its answer finds the request's documents in a list published from the listener.
    void set_documents_listener(std::function<void()> listener) { documents_listener_ = std::move(listener); }
    // The tokens of a known cached document of the tenant (a request may name it by id alone).
    std::optional<std::vector<int32_t>> document_tokens(const std::string& tenant, const std::string& id) const {
        return kv_.document_tokens(tenant, id);
    }
    int32_t num_pinned_blocks() const { return kv_.num_pinned_blocks(); }
    // The persistent store (--kv-store; null without one) and the store key of a document of a
    // tenant (what `lazyattn precompute` checks before computing it).
    store::SegmentStore* segment_store() { return kv_.segment_store(); }
    std::string store_key(const std::string& tenant, const std::vector<int32_t>& tokens, int32_t neighbours = 0) const {
        return kv_.store_key(tenant, tokens, neighbours);
    }
    // The corpus neighbour-conditioned documents of `tenant` are encoded against
    // (DocumentReuse::neighbours); engine thread only, as every scheduler call.
    void index_documents(const std::string& tenant, std::span<const std::vector<int32_t>> documents) {
        kv_.index_documents(tenant, documents);
    }

    const SequenceState* find(uint64_t id) const;
    const kv::KvCache& kv_cache() const { return kv_.kv_cache(); }
    KvManager& kv_manager() { return kv_; }
    const EngineConfig& config() const { return config_; }
    // The context length requests may use: the model's, or EngineConfig::max_model_len below it.
    int32_t context_length() const {
        const int32_t model_ctx = model_.context_length;
        return config_.max_model_len > 0 ? std::min(config_.max_model_len, model_ctx) : model_ctx;
    }
    int64_t num_steps() const { return step_count_; }
    // Documents the registry remembers, over every tenant (bounded: see prune_documents()).
    int64_t num_registered_documents() const { return kv_.num_registered_documents(); }
    // Pool, cache index and every reference held by requests, jobs and pins agree.
    void check_integrity() const;

private:
    Status validate(const RagRequest& r) const;
    // Admission (scheduler_admission.cpp): placed by the KvManager, then counted.
    bool try_admit(SequenceState& s);

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
    // Tail rows [begin, end) of s as one sequence over its segments and the tail's own blocks,
    // no logits; returns the first row.
    int32_t add_tail_sequence(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end);
    // The probe's rows (the prompt tail's [begin, end) against the cached documents), the last
    // kProbeMeasuredRows of the prompt tail measured (batch.mass_seqs); returns where this
    // chunk's mass starts in the step's, or -1 when none of its rows is measured.
    int64_t add_probe_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end);
    // KV-deviation rows [begin, end) of s (its documents with a budget, every token, in order),
    // each placed at its logical position with everything before it in view and compared with
    // its cached copy (not written), in the step's measuring batch.
    void add_deviation_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end);
    // A deviation chunk ran: records its rows' deviations and, once every row has been measured,
    // chooses the recomputed rows.
    void on_deviation(const DeviationChunk& r, const std::vector<float>& kv_deviation);
    // Rows [begin, end) of s's recomputed document tokens (all documents' in order), no logits.
    void add_patch_rows(model::ForwardBatch& b, SequenceState& s, int32_t begin, int32_t end);
    // A probe chunk ran: adds its mass to the documents' and, once the whole prompt tail has
    // run, chooses the recomputed rows.
    void on_probe(const ProbeChunk& r, const std::vector<float>& key_mass);
    // The spans of s's segments as its tail and patch rows read them.
    void add_segment_spans(model::ForwardBatch& b, const SequenceState& s);

    int32_t vocab_size() const { return model_.vocab_size; }

    ModelFacts model_;
    EngineConfig config_;
    KvManager kv_;  // where every request's KV lives

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
