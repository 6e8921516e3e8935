// Neighbour conditioning (DocumentReuse::neighbours, FusionRAG's offline step): what a
// conditioned document is encoded after, and how its copy is told apart from the plain one. The
// KV manager places the prefix and the document's job; the rule of what they hold is here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/reuse/neighbour_index.h"
#include "kv/block_hash.h"

namespace lazyattn::engine {

struct ConditioningPrefix {
    std::vector<int32_t> tokens;       // empty: the document is encoded alone
    bool short_of_neighbours = false;  // the index had fewer than the k asked for
};

// The context `document` of `tenant` is encoded after when conditioned on k neighbours: its k
// nearest in `index`, the most similar last (next to the document, as FusionRAG orders them),
// each contributing its first tokens, an equal share of DocumentReuse::kMaxNeighbourTokens and
// no more than the document's own length.
ConditioningPrefix conditioning_prefix(const NeighbourIndex& index, const std::string& tenant,
                                       const std::vector<int32_t>& document, int32_t k);

// The chain seed of a document's copy conditioned on k neighbours (k > 0): another encoding of
// the document, never mixed with the plain copy nor with one conditioned on another k.
kv::BlockHash conditioned_seed(const kv::BlockHash& seed, int32_t k);

}  // namespace lazyattn::engine
