// KvManager: where every request's KV lives (vLLM v1's KVCacheManager, with documents as
// first-class citizens). It owns the pool's bookkeeping (kv::KvCache: blocks, references, the
// content-hash index), the segment jobs (a missing document computed once for every request
// that needs it), block-attn's private copies, the tenants' chain seeds, and the persistent
// store's adapter (kv_store_adapter.h). The document registry (pins and quotas, on its pool) and
// the neighbour index are the Scheduler's; their state reaches it as arguments. The Scheduler
// asks it for blocks and gets them or "does not fit" (which it answers with waiting or
// preemption); it never touches a block itself.
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
#include "engine/engine_config.h"
#include "engine/reuse/neighbour_index.h"
#include "engine/reuse/patch_shares.h"
#include "engine/scheduler/kv_store_adapter.h"
#include "engine/sequence/sequence_state.h"
#include "kv/kv_cache.h"
#include "model/forward_batch.h"
#include "store/segment_store.h"

namespace lazyattn::engine {

class KvManager {
public:
    // `model_description` and `fingerprint` key the chains and the store entries.
    // `context_length`: the longest segment it will hold (bounds what a store read may return).
    KvManager(const std::string& model_description, const store::Fingerprint& fingerprint, double fingerprint_ms,
              backend::KvMemory& kv_memory, const EngineConfig& config, int32_t context_length);
    // Whether the persistent store opened (ok without one).
    const Status& status() const { return status_; }

    // --- Requests.
    ChainSeeds seeds_for(const std::string& tenant) const;
    // Whether r fits the blocks no document pins (`pins`), alone (its tenant's pinned documents
    // counted as present); thread-safe (reads the pool's size and the pin ledger only).
    Status check_fits(const RagRequest& r, const ChainSeeds& seeds, int32_t context_length,
                      const PinLedger& pins) const;
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
    // Publishes s's computed prompt tail (a later request with the same prompt reuses it).
    void publish_tail(const SequenceState& s);
    // The block-attn copies planned since the last call (they run in the next forward).
    std::vector<model::KvBlockCopy> take_copies();

    // --- Segment jobs.
    const std::map<int64_t, SegmentJob>& jobs() const { return jobs_; }
    // n more tokens of the job computed; when that completes it, the segment is published (and
    // handed to the store), the job ends and true is returned (its users' KV is ready).
    bool advance_job(int64_t job_id, int32_t n);
    int64_t num_jobs_started() const { return num_jobs_started_; }

    // --- The persistent store (its store() null without --kv-store).
    KvStoreAdapter& store() { return store_; }
    const KvStoreAdapter& store() const { return store_; }

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
    // A neighbour-conditioned document to compute (DocumentReuse::neighbours): the prefix it is
    // encoded after (its neighbours' tokens), that prefix's cached blocks (references taken) or
    // the running job computing it.
    struct Conditioning {
        size_t segment = 0;
        std::vector<int32_t> tokens;
        kv::BlockHash seed;
        std::vector<kv::BlockId> blocks;
        int64_t job = -1;
        bool short_of_neighbours = false;  // the index had fewer than the K asked for
    };

    int64_t blocks_needed(const RagRequest& r, int32_t context_length) const;
    void match_segments(SequenceState& s, std::vector<size_t>* needs_job);
    // The prefixes of the conditioned documents among needs_job.
    std::vector<Conditioning> match_conditioning(const SequenceState& s, const std::vector<size_t>& needs_job,
                                                 const NeighbourIndex& neighbours);
    void release_conditioning(std::vector<Conditioning>& prefixes);
    // Makes `job` (a conditioned document's) read the prefix c, started as a job of its own
    // when not cached nor running; c's references move to the job.
    void start_conditioning(SegmentJob& job, Conditioning& c);
    // Registers a new segment job, taking its reference on each of job.blocks; its id.
    int64_t add_job(SegmentJob job);
    void start_jobs(SequenceState& s, const std::vector<size_t>& needs_job, std::vector<Conditioning>& prefixes);
    // The first segment of s with segment d's tokens and seed (d itself when none before it):
    // a repeat reads that one's blocks.
    size_t first_occurrence(const SequenceState& s, size_t d) const;
    void match_tail(SequenceState& s);
    // s's phases before its tail (plan_phases), and the patch blocks the plan asks for.
    void start_patches(SequenceState& s);
    int64_t fresh_blocks_needed(const SequenceState& s, const std::vector<size_t>& needs_job,
                                const std::vector<Conditioning>& prefixes, bool others_running) const;
    int64_t find_job(const kv::BlockHash& seed, const std::vector<int32_t>& tokens) const;
    kv::BlockHash segment_seed(const SequenceState& s, size_t d) const;
    kv::BlockHash tail_seed(const SequenceState& s) const;
    void drop_job(int64_t job_id);

    // Segment d of s read from the store into its blocks (the first num_present hold it already)
    // and published: a hit.
    bool load_segment(SequenceState& s, size_t d, int32_t num_present);

    EngineConfig config_;
    Status status_;
    kv::KvCache kv_;                                        // the pool's bookkeeping (the runner's memory's shape)
    kv::BlockHash segment_seed_, tail_seed_, prefix_seed_;  // keyed; salted per tenant
    std::map<int64_t, SegmentJob> jobs_;                    // ordered: oldest job first
    int64_t next_job_id_ = 0;
    int64_t num_jobs_started_ = 0;
    // Block-attn copies planned since the last forward, with the request each serves (dropped
    // when that request releases its blocks).
    std::vector<std::pair<uint64_t, model::KvBlockCopy>> pending_copies_;
    PatchShares patches_{kv_};
    KvStoreAdapter store_;  // after config_
};

}  // namespace lazyattn::engine
