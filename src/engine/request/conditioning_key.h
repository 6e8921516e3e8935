// ConditioningKey: what a neighbour-conditioned copy of a document (DocumentReuse::neighbours)
// was encoded after, as its RAM chain and its store entry name it. reuse/conditioning.h makes it
// from the neighbours a tenant's index gives (conditioning_prefix); the KV manager salts the
// copy's chain seed with name(), and the store's variant (store::segment_variant) hashes the same
// name, so every tier (disk, Redis, Redis Cluster) keys the copy by it.
//
// With the document's own tokens (which every chain and store key hashes already) it names
// exactly one copy: the neighbours' content hashes in the order read and the prefix's length fix
// the prefix tokens (each neighbour contributes its first min(size, share) tokens, so the total
// length fixes the share wherever the share matters). Another index (a restart, another tenant's,
// a corpus that grew) giving other neighbours, another order or another cut names another entry:
// a miss, never a copy conditioned on something else.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace lazyattn::engine {

struct ConditioningKey {
    int32_t neighbours = 0;     // K asked for; 0: no conditioning (the plain copy)
    int32_t prefix_tokens = 0;  // tokens of the neighbours the document is encoded after
    // XXH3-128 over K, the prefix length and each neighbour's XXH3-128 content hash, in the
    // order read (the most similar last).
    uint64_t low = 0, high = 0;

    bool conditioned() const { return neighbours > 0; }
    bool operator==(const ConditioningKey&) const = default;

    // "neighbours=K/prefix=N/<32 hex digits>"; "" for the plain copy. The one spelling the chain
    // salt and the store variant are made from.
    std::string name() const {
        if (!conditioned()) return {};
        char hex[33];
        std::snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)high, (unsigned long long)low);
        return "neighbours=" + std::to_string(neighbours) + "/prefix=" + std::to_string(prefix_tokens) + "/" + hex;
    }
};

}  // namespace lazyattn::engine
