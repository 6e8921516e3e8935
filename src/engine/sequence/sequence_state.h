// The scheduler's view of one request: where each segment's KV lives (shared cached blocks, a
// segment job still computing, or a private copy), the tail's blocks and token counters, every
// block reference held, and the generation state (the runner's sampler, the output processor's
// decoder and stop strings).
// Prefill is phases (RequestKv::phases, the tail last): the prompt is done when the tail phase
// is; a sampled token waits in tail_tokens until the next step computes it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/request/rag_request.h"
#include "engine/request/request_handle.h"
#include "engine/sequence/request_kv.h"
#include "engine/sequence/sampler.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace lazyattn::engine {

struct RequestOutput;  // request_output.h: the request's text state

// The chain seeds of one tenant: the scheduler's keyed seeds salted with the tenant, so tenants
// never share (or probe) each other's cached blocks.
struct ChainSeeds {
    kv::BlockHash segment, tail, prefix;
};

// A missing segment being computed once for every request that needs it.
struct SegmentJob {
    kv::BlockHash seed;  // the chain seed it is published under
    std::vector<int32_t> tokens;
    std::vector<kv::BlockId> blocks;  // the job holds one reference on each until it ends
    int32_t num_computed = 0;         // leading tokens whose K/V are written (or were cached)
    int32_t num_users = 0;            // admitted requests reading this segment, and anchored jobs
                                      // waiting for it (the preamble's job)
    // An anchored document (RagRequest::reuse): encoded after the preamble, whose blocks the job
    // reads (one reference each, held until the job ends) and whose job, while it runs, must
    // finish first (anchor_job holds one user of it).
    // A neighbour-conditioned document (RagRequest::conditioning_neighbours) reads its prefix
    // the same way, with keys_from_zero: its keys are stored rotated from position 0, as a plain
    // document's, so any request reads the copy without knowing what it was encoded after.
    std::vector<kv::BlockId> anchor_blocks;
    int32_t anchor_tokens = 0;
    int64_t anchor_job = -1;
    bool keys_from_zero = false;
    // Published to the RAM cache under `seed` when done, and joinable meanwhile by requests
    // needing the same segment. Not for a document conditioned on fewer neighbours than its seed
    // says (the index had fewer than K): that copy serves the requests that started it only.
    bool shared = true;
    // Written to the persistent store when done (plain documents only: not anchored, not
    // position-keyed), as an entry of this variant (keys rotated or raw, tenant). Never when
    // not `shared`.
    bool storable = false;
    uint64_t store_variant = 0;
    // Background work (a conditioned copy made in unused step budget, scheduler/
    // background_conditioning.h): planned only from what requests leave, cancelled when a waiting
    // request needs its blocks. A request that joins it (or its prefix) makes it foreground.
    bool background = false;
    bool done() const { return num_computed == int32_t(tokens.size()); }
};

struct SequenceState {
    SequenceState();
    ~SequenceState();  // out of line: RequestOutput is complete only there

    uint64_t id = 0;
    RagRequest request;
    ChainSeeds seeds;  // the request's tenant's
    std::shared_ptr<RequestHandle> handle;
    bool want_all_tail_logits = false;
    std::vector<float> tail_logits;  // [tail prompt rows, vocab] when wanted
    // RagRequest::prompt_logprobs >= 0: per request.tail token (NaN / empty until computed).
    std::vector<float> prompt_logprobs;
    std::vector<TopLogprobs> prompt_top_logprobs;

    // KV state (valid while admitted).
    bool admitted = false;
    uint64_t admit_order = 0;           // larger = admitted later (the preemption victim)
    RequestKv kv;                       // placements, tail blocks and counters, references held
    std::vector<int64_t> segment_jobs;  // per segment: job id, or -1 when its KV is ready
    bool materialized = false;          // block-attn: private re-rotated copies made
    struct AdmissionCounts {
        int32_t hits = 0, misses = 0, reused = 0, computed = 0, from_store = 0;
        // neighbours@ready: documents looked up, and of those read as their conditioned copy.
        int32_t conditioned_lookups = 0, conditioned = 0;
    } admission;  // segment accounting of the current admission

    // Generation.
    std::unique_ptr<Sampler> sampler;       // the ModelRunner's: penalties and the seeded draw
    std::unique_ptr<RequestOutput> output;  // the OutputProcessor's: decoder and stop strings
    std::vector<int32_t> history;           // prompt then generated tokens, for the penalties
    int32_t num_generated = 0;
    double t_submit = 0, t_admit = 0, t_first_token = 0;
    int64_t submit_step = 0;  // scheduler step at submission (fairness checks)
    int64_t admit_step = -1;
    RequestStats stats;

    // Every tail prompt row yields logits (raw logits kept, or prompt logprobs wanted).
    bool all_tail_rows() const { return want_all_tail_logits || request.prompt_logprobs >= 0; }
    bool prompt_done() const { return kv.tail().done(); }
    // The finish rule that needs no text: the request has generated its max_tokens, or the token
    // just sampled (queued last in the tail) sits at the context's last position and could not
    // be computed. "length" then (OutputProcessor; a model-free test's output side too).
    bool at_length_limit(int32_t context_length) const {
        return num_generated >= request.max_tokens || kv.next_position() - 1 >= context_length;
    }
    bool segments_ready() const {
        for (int64_t j : segment_jobs) {
            if (j >= 0) return false;
        }
        return true;
    }
};

}  // namespace lazyattn::engine
