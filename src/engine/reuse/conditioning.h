// Neighbour conditioning (DocumentReuse::neighbours, FusionRAG's offline step): what a
// conditioned document is encoded after, how its copy is told apart from the plain one, and how
// that prefix is placed: matched in the cache or joined while running at admission, else started
// as a job of its own that the document's job reads. The KV manager calls these as it places the
// request's segment jobs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/documents/segment_jobs.h"
#include "engine/request/conditioning_key.h"
#include "engine/request/rag_request.h"
#include "engine/reuse/neighbour_index.h"
#include "kv/block_hash.h"
#include "kv/kv_cache.h"

namespace lazyattn::engine {

struct ConditioningPrefix {
    std::vector<int32_t> tokens;       // empty: the document is encoded alone
    bool short_of_neighbours = false;  // the index had fewer than the k asked for
    // The neighbours read, in the order read (the most similar last); into the index: valid
    // until it next changes.
    std::vector<const std::vector<int32_t>*> neighbours;
    // What the copy encoded after this prefix is named by (conditioning_key.h): in RAM and in
    // every store tier.
    ConditioningKey key;
};

// The context `document` of `tenant` is encoded after when conditioned on k neighbours: its k
// nearest in `index`, the most similar last (next to the document, as FusionRAG orders them),
// each contributing its first tokens, an equal share of DocumentReuse::kMaxNeighbourTokens and
// no more than the document's own length; with the key naming the copy.
ConditioningPrefix conditioning_prefix(const NeighbourIndex& index, const std::string& tenant,
                                       const std::vector<int32_t>& document, int32_t k);
// The key of a copy conditioned on k neighbours read in this order with `prefix_tokens` tokens of
// them: the one place a copy's name is made (conditioning_key.h).
ConditioningKey conditioning_key(int32_t k, const std::vector<const std::vector<int32_t>*>& neighbours,
                                 int32_t prefix_tokens);

// The chain seed of a document's conditioned copy named `key` (conditioned): another encoding of
// the document, never mixed with the plain copy nor with one conditioned on other neighbours.
kv::BlockHash conditioned_seed(const kv::BlockHash& seed, const ConditioningKey& key);

// A conditioned document to compute: the prefix it is encoded after (its neighbours' tokens),
// and that prefix's cached blocks (references taken) or the running job computing it.
struct ConditioningPlacement {
    size_t segment = 0;
    std::vector<int32_t> tokens;
    kv::BlockHash seed;
    std::vector<kv::BlockId> blocks;
    int64_t job = -1;
    bool short_of_neighbours = false;  // the index had fewer than the K asked for
};

// The prefixes of r's conditioned documents among `needs_job` (the segments to compute), from
// `index`. A prefix is plain causal KV from position 0: the same as any segment of its tokens
// encoded alone, so it is looked up (and later published) under the tenant's plain `seed`.
std::vector<ConditioningPlacement> match_conditioning(const RagRequest& r, const kv::BlockHash& seed,
                                                      const std::vector<size_t>& needs_job, const NeighbourIndex& index,
                                                      const SegmentJobs& jobs, kv::KvCache& kv);
// The references the prefixes hold, returned (the admission does not fit after all).
void release_conditioning(std::vector<ConditioningPlacement>& prefixes, kv::KvCache& kv);
// Makes `job` (a conditioned document's) read the prefix c, started as a job of its own in fresh
// blocks when neither cached nor running (admission counted them); c's references move to `job`.
void start_conditioning(SegmentJob& job, ConditioningPlacement& c, SegmentJobs& jobs, kv::KvCache& kv);

}  // namespace lazyattn::engine
