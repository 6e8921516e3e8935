// KvManager: where every request's KV lives (vLLM v1's KVCacheManager, with documents as
// first-class citizens): placement (cached segments and tails matched, the rest made segment
// jobs, patch and tail blocks allocated, "placed" or "does not fit"), the jobs' progress and
// end, and block-attn's private copies. It owns the pool's bookkeeping (kv::KvCache: blocks,
// references, the content-hash index), the jobs' table (documents/segment_jobs.h) and the
// tenants' chain seeds. What a phase plan asks for (reuse/phase_kinds.h), what a conditioned
// document reads (reuse/conditioning.h), the document registry and the neighbour index (the
// Scheduler's) and the persistent store (EngineCore's KvStoreAdapter) reach it as calls and
// arguments. The Scheduler asks it for blocks and gets them or "does not fit" (which it answers
// with waiting or preemption); it never touches a block itself.
//
// Admission takes its references before anything is allocated, so allocation (which may evict
// cached blocks) can never evict a block the request is about to reuse, and allocates nothing
// until the whole request is known to fit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/kv_memory.h"
#include "core/status.h"
#include "engine/documents/document_registry.h"
#include "engine/documents/segment_jobs.h"
#include "engine/engine_config.h"
#include "engine/reuse/conditioning.h"
#include "engine/reuse/neighbour_index.h"
#include "engine/reuse/patch_shares.h"
#include "engine/scheduler/kv_store_adapter.h"
#include "engine/sequence/sequence_state.h"
#include "kv/kv_cache.h"
#include "model/forward_batch.h"

namespace lazyattn::engine {

class KvManager {
public:
    // `model_description` keys the chains; `store` (EngineCore's; null without one) is where
    // computed documents are written and missing ones looked up.
    KvManager(const std::string& model_description, backend::KvMemory& kv_memory, const EngineConfig& config,
              KvStoreAdapter* store);

    // --- Requests.
    ChainSeeds seeds_for(const std::string& tenant) const;
    // Places s's KV: cached segments and tail blocks matched (references taken), running jobs
    // joined, the rest made segment jobs (or loaded from the store), a conditioned document's
    // prefix taken from its neighbours in `neighbours`, recompute (patch) blocks and the prompt
    // tail's blocks allocated; s.kv, s.segment_jobs and s.admission filled. False (and nothing
    // held) when it does not fit now. `others_running`: block-attn then counts room for s's
    // private copies up front.
    bool allocate(SequenceState& s, bool others_running, const NeighbourIndex& neighbours);
    // Tail blocks for num_tokens tokens; false when the pool has no room (preempt or wait).
    bool grow_tail(SequenceState& s, int32_t num_tokens);
    // Block-attn: s's private re-rotated copy of every segment (planned into the next forward);
    // not ok when the pool has no room.
    Status make_private_copies(SequenceState& s);
    // Every reference s holds returned; s is no longer placed.
    void free(SequenceState& s);
    // Publishes s's computed prompt tail (a later request with the same prompt reuses it) and
    // lets go of the block its first rows were copied from.
    void publish_tail(SequenceState& s);
    // The block-attn copies planned since the last call (they run in the next forward).
    std::vector<model::KvBlockCopy> take_copies();

    // --- Segment jobs.
    const std::map<int64_t, SegmentJob>& jobs() const { return jobs_.all(); }
    // n more tokens of the job computed; when that completes it, the segment is published (and
    // handed to the store), the job ends and true is returned (its users' KV is ready).
    bool advance_job(int64_t job_id, int32_t n);
    int64_t num_jobs_started() const { return jobs_.num_started(); }

    // --- Background work (scheduler/background_conditioning.h).
    // Starts the job making `tenant`'s copy of `tokens` named `key`, encoded after `prefix` (its
    // neighbours' tokens, conditioning_prefix): a shared segment job marked background,
    // published to RAM and handed to the store when done, as a request's conditioned job is; the
    // prefix read from the cache, joined while running, or made a background job of its own. The
    // caller holds its one user. -1 (nothing held) when the pool has no room for it now.
    // `reserve`: blocks it must leave free (room for the next request).
    int64_t start_background_job(const std::string& tenant, const std::vector<int32_t>& tokens,
                                 const ConditioningKey& key, const std::vector<int32_t>& prefix, int32_t reserve);
    // Whether `tenant`'s conditioned copy of `tokens` named `key` is in the RAM cache.
    bool has_conditioned_copy(const std::string& tenant, const std::vector<int32_t>& tokens,
                              const ConditioningKey& key) const;
    // The caller's user of a job let go: a job nobody else needs is dropped with its blocks (and
    // a prefix job only it needed).
    void leave_job(int64_t id) { jobs_.leave(id); }

    const kv::KvCache& kv_cache() const { return kv_; }
    // The pool's bookkeeping for the document registry, whose pins hold references on it.
    kv::KvCache& kv_cache() { return kv_; }
    int32_t block_size() const { return kv_.block_size(); }
    int32_t num_blocks() const { return kv_.pool().num_blocks(); }
    // The choices of one request sharing its recomputed rows (reuse/patch_shares.h).
    PatchShares& patch_shares() { return patches_; }
    // The pool, the index and every reference held by `requests`, jobs and `documents`' pins agree.
    void check_integrity(const std::vector<const SequenceState*>& requests, const DocumentRegistry& documents) const;

private:
    void match_segments(SequenceState& s, const NeighbourIndex& index, std::vector<size_t>* needs_job);
    // Conditioned documents: the copy each reads, named by the neighbours `index` gives now
    // (RagRequest::conditioned_on); with neighbours@ready, also which have that copy (RAM or
    // store) now (RagRequest::conditioned_ready), counted in s.admission, unless decided already
    // (RagRequest::conditioning_pinned).
    void resolve_conditioned_copies(SequenceState& s, const NeighbourIndex& index);
    void start_jobs(SequenceState& s, const std::vector<size_t>& needs_job,
                    std::vector<ConditioningPlacement>& prefixes);
    // The first segment of s with segment d's tokens and seed (d itself when none before it):
    // a repeat reads that one's blocks.
    size_t first_occurrence(const SequenceState& s, size_t d) const;
    void match_tail(SequenceState& s);
    // s's phases before its tail (plan_phases), and the patch blocks the plan asks for.
    void start_patches(SequenceState& s);
    int64_t fresh_blocks_needed(const SequenceState& s, const std::vector<size_t>& needs_job,
                                const std::vector<ConditioningPlacement>& prefixes, bool others_running) const;
    kv::BlockHash segment_seed(const SequenceState& s, size_t d) const;
    kv::BlockHash tail_seed(const SequenceState& s) const;
    // Segment d of s read from the store into its blocks (the first num_present hold it already)
    // and published: a hit.
    bool load_segment(SequenceState& s, size_t d, int32_t num_present);

    EngineConfig config_;
    kv::KvCache kv_;    // the pool's bookkeeping (the runner's memory's shape)
    ChainSeeds seeds_;  // keyed, before any tenant's salt
    SegmentJobs jobs_;  // on kv_
    // Block-attn copies planned since the last forward, with the request each serves (dropped
    // when that request releases its blocks).
    std::vector<std::pair<uint64_t, model::KvBlockCopy>> pending_copies_;
    PatchShares patches_{kv_};
    KvStoreAdapter* store_;  // EngineCore's; null: none
};

}  // namespace lazyattn::engine
