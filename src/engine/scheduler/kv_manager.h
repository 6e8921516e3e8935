// KvManager: where every request's KV lives (vLLM v1's KVCacheManager, with documents as
// first-class citizens). It owns the pool's bookkeeping (kv::KvCache: blocks, references, the
// content-hash index), the segment jobs (a missing document computed once for every request
// that needs it), block-attn's private copies, the tenants' chain seeds, the document registry
// with its pins and quotas, and the persistent store's lookups and writes. The Scheduler asks it
// for blocks and gets them or "does not fit" (which it answers with waiting or preemption); it
// never touches a block itself.
//
// Admission takes its references before anything is allocated, so allocation (which may evict
// cached blocks) can never evict a block the request is about to reuse, and allocates nothing
// until the whole request is known to fit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/kv_memory.h"
#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/scheduler/neighbour_index.h"
#include "engine/scheduler/pin_ledger.h"
#include "engine/sequence/sequence_state.h"
#include "kv/kv_cache.h"
#include "model/forward_batch.h"
#include "store/segment_store.h"

namespace lazyattn::engine {

// A document (segment) the cache knows, as GET /v1/documents lists it.
struct DocumentInfo {
    std::string id;  // hex of a keyed hash of the segment's chain (model, KV variant, tenant)
    int32_t num_tokens = 0;
    bool pinned = false;
    int32_t pin_count = 0;    // pins held by its tenant; each needs an unpin
    double last_used_ms = 0;  // steady-clock milliseconds of the last request that read it
};

class KvManager {
public:
    // `model_description` and `fingerprint` key the chains and the store entries.
    KvManager(const std::string& model_description, const store::Fingerprint& fingerprint, double fingerprint_ms,
              backend::KvMemory& kv_memory, const EngineConfig& config);
    // Whether the persistent store opened (ok without one).
    const Status& status() const { return status_; }

    // --- Requests.
    ChainSeeds seeds_for(const std::string& tenant) const;
    // Whether r fits the blocks no document pins, alone (its tenant's pinned documents counted
    // as present); thread-safe (reads the pool's size and the pin ledger only).
    Status check_fits(const RagRequest& r, const ChainSeeds& seeds, int32_t context_length) const;
    // Places s's KV: cached segments and tail blocks matched (references taken), running jobs
    // joined, the rest made segment jobs (or loaded from the store), recompute (patch) blocks
    // and the prompt tail's blocks allocated; s.kv, s.segment_jobs and s.admission filled.
    // False (and nothing held) when it does not fit now. `others_running`: block-attn then
    // counts room for s's private copies up front.
    bool allocate(SequenceState& s, bool others_running);
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

    // --- Documents, per tenant: a tenant sees, reuses and pins only its own (see Scheduler).
    std::string document_id(const std::string& tenant, const std::vector<int32_t>& tokens) const;
    Expected<DocumentInfo> pin_document(const std::string& tenant, const std::vector<int32_t>& tokens);
    Status unpin_document(const std::string& tenant, const std::string& id);
    std::vector<DocumentInfo> list_documents(const std::string& tenant);
    std::map<std::string, std::vector<DocumentInfo>> list_all_documents();
    std::optional<std::vector<int32_t>> document_tokens(const std::string& tenant, const std::string& id) const;
    // Registers s's documents as used now.
    void note_documents(const SequenceState& s);
    // Adds documents to `tenant`'s neighbour index (DocumentReuse::neighbours: the corpus a
    // conditioned document's neighbours are chosen from); requests that condition add theirs.
    void index_documents(const std::string& tenant, std::span<const std::vector<int32_t>> documents);
    const NeighbourIndex& neighbour_index() const { return neighbours_; }
    uint64_t documents_version() const { return documents_version_; }
    int64_t num_registered_documents() const { return num_document_entries_; }
    int32_t num_pinned_blocks() const { return pins_.num_pinned(); }
    uint64_t pins_version() const { return pins_.version(); }

    // --- The persistent store (null without --kv-store).
    store::SegmentStore* segment_store() const { return store_.get(); }
    // The entry of a document of `tenant`: its plain copy, or (neighbours > 0) its copy
    // conditioned on that many neighbours.
    std::string store_key(const std::string& tenant, const std::vector<int32_t>& tokens, int32_t neighbours = 0) const;

    const kv::KvCache& kv_cache() const { return kv_; }
    backend::KvMemory& kv_memory() { return kv_memory_; }
    int32_t block_size() const { return kv_.block_size(); }
    int32_t num_blocks() const { return kv_.pool().num_blocks(); }
    // The measurement of a request that selects by one (the question's probe, or the KV
    // deviation) ended: chooses each document's recomputed rows from the scores it left
    // (select_by_mass) and schedules them; returns how many.
    int32_t select_by_score(SequenceState& s);
    // s's recomputed rows are all computed (measured, chosen and run): the choices following it
    // (RagRequest::choice_group) take them and may run. Cheap when s leads nothing.
    void share_ready_patches(SequenceState& s);
    // The pool, the index and every reference held by `requests`, jobs and pins agree.
    void check_integrity(const std::vector<const SequenceState*>& requests) const;

private:
    struct DocumentEntry {
        std::vector<int32_t> tokens;
        kv::BlockHash chain_end;                 // names it in the pin ledger
        std::vector<kv::BlockId> pinned_blocks;  // one reference each while pin_count > 0
        int32_t pin_count = 0;
        double last_used_ms = 0;
    };

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
    std::vector<Conditioning> match_conditioning(const SequenceState& s, const std::vector<size_t>& needs_job);
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
    void start_patches(SequenceState& s);
    // --- Patch shares (kv_manager_patch_share.cpp): the choices of one request compute their
    // recomputed rows once. The leader is the first choice admitted; a choice admitted while it
    // holds its patch blocks follows it (references to the same blocks, nothing computed).
    struct PatchShare {
        SequenceState* leader = nullptr;
        std::vector<SequenceState*> waiting;  // followers whose rows are not copied in yet
    };
    // The admitted sibling whose patches s can read, or null (s then computes its own).
    SequenceState* patch_leader(const SequenceState& s) const;
    // s reads the leader's patch blocks (references taken), and its rows once they are ready.
    void follow_patches(SequenceState& s, SequenceState& leader);
    // s releases its KV: a leader hands its unfinished patches (and the blocks its followers
    // hold) to the first waiting follower, which computes the rest; a follower leaves the list.
    void leave_patch_share(SequenceState& s);
    int64_t fresh_blocks_needed(const SequenceState& s, const std::vector<size_t>& needs_job,
                                const std::vector<Conditioning>& prefixes, bool others_running) const;
    int64_t find_job(const kv::BlockHash& seed, const std::vector<int32_t>& tokens) const;
    kv::BlockHash segment_seed(const SequenceState& s, size_t d) const;
    kv::BlockHash tail_seed(const SequenceState& s) const;
    void drop_job(int64_t job_id);

    Status open_store(double fingerprint_ms);
    bool segment_storable(const SequenceState& s, size_t d) const;
    uint64_t store_variant(const std::string& tenant, int32_t neighbours) const;
    bool load_segment(SequenceState& s, size_t d, int32_t num_present);
    void store_segment(uint64_t variant, const std::vector<int32_t>& tokens, const std::vector<kv::BlockId>& blocks);

    void prune_documents();
    Status check_pin_room(const std::string& tenant, int32_t num_new) const;
    DocumentInfo info(const std::string& id, const DocumentEntry& e) const;

    EngineConfig config_;
    store::Fingerprint fingerprint_;
    Status status_;
    backend::KvMemory& kv_memory_;  // the runner's; read and written only by the store
    kv::KvCache kv_;                // its bookkeeping (kv_memory_'s shape)
    PinLedger pins_;
    kv::BlockHash segment_seed_, tail_seed_, prefix_seed_;  // keyed; salted per tenant
    std::map<int64_t, SegmentJob> jobs_;                    // ordered: oldest job first
    std::map<uint64_t, PatchShare> patch_shares_;           // by RagRequest::choice_group
    int64_t next_job_id_ = 0;
    int64_t num_jobs_started_ = 0;
    // Block-attn copies planned since the last forward, with the request each serves (dropped
    // when that request releases its blocks).
    std::vector<std::pair<uint64_t, model::KvBlockCopy>> pending_copies_;
    std::map<std::string, std::map<std::string, DocumentEntry>> documents_;  // tenant -> id -> entry
    uint64_t documents_version_ = 0;
    int64_t num_document_entries_ = 0;            // over every tenant; bounded by prune_documents()
    std::unique_ptr<store::SegmentStore> store_;  // null without --kv-store
    NeighbourIndex neighbours_;
};

}  // namespace lazyattn::engine
