// KvStoreAdapter: the KV manager's link to the persistent segment store (--kv-store). A
// document's KV depends only on the model, the KV variant and its tokens, so a segment missing
// from the RAM pool is looked up in the store's tiers before it is computed, and a computed one
// is handed to the store's writer thread. Plain documents qualify, and neighbour-conditioned ones
// (one copy per document and set of neighbours, its own variant named by its ConditioningKey: the
// neighbours' content hashes in order and the prefix length): an anchored document's KV depends
// on its preamble, and the position-keyed baseline's on its slot.
//
// It owns the store and reads and writes the pool's memory (the runner's); which blocks, and
// what is published in the RAM cache, stay the KV manager's. EngineCore owns it and opens it
// once at start-up (each tier opened and asked for one key, EngineConfig::kv_store_unreachable
// saying what an unreachable one does); the KV manager and the document registry write through
// it, and the engine's faces reach the store through EngineCore::kv_store().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/kv_memory.h"
#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/request/rag_request.h"
#include "kv/block_pool.h"
#include "store/segment_store.h"

namespace lazyattn::engine {

class KvStoreAdapter {
public:
    // `kv_memory` is the pool the entries are read into and written from.
    KvStoreAdapter(const EngineConfig& config, backend::KvMemory& kv_memory);
    // Opens the configured tiers, each once (none, or a cache mode without segments: ok, and
    // nothing is stored); `fingerprint` (of the weights, made in fingerprint_ms) keys the
    // entries. No entry is larger than a segment of `context_length` tokens. Not ok when a tier
    // is refused (store::UnreachableTiers); the tiers found unreachable are logged.
    Status open(const store::Fingerprint& fingerprint, double fingerprint_ms, int32_t context_length);

    // The store (null without one).
    store::SegmentStore* store() const { return store_.get(); }
    // Whether segment d of r may be stored and loaded (false without a store).
    bool storable(const RagRequest& r, size_t d) const;
    // The entries' variant of `tenant`'s documents read as `conditioning` (none: the plain copy).
    uint64_t variant(const std::string& tenant, const ConditioningKey& conditioning) const;
    // The entry of a document of `tenant`: its plain copy, or its conditioned copy named
    // `conditioning`.
    std::string key(const std::string& tenant, const std::vector<int32_t>& tokens,
                    const ConditioningKey& conditioning = {}) const;
    // Whether a tier holds that entry (a lookup per tier, no data read; false without a store).
    bool contains(const std::string& tenant, const std::vector<int32_t>& tokens,
                  const ConditioningKey& conditioning = {}) const;
    // Segment d of r read into `blocks` (the first num_present already hold its first tokens);
    // false when no tier has it.
    bool load(const RagRequest& r, size_t d, const std::vector<kv::BlockId>& blocks, int32_t num_present);
    // A computed entry handed to the writer thread (nothing without a store).
    void write(uint64_t variant, const std::vector<int32_t>& tokens, const std::vector<kv::BlockId>& blocks);
    // A document of `tenant` pinned for the first time, kept in the store too as its plain copy
    // (the writer skips entries already there; nothing for the position-keyed baseline).
    void write_pinned(const std::string& tenant, const std::vector<int32_t>& tokens,
                      const std::vector<kv::BlockId>& blocks);

private:
    const EngineConfig config_;
    store::Fingerprint fingerprint_;
    backend::KvMemory& kv_memory_;  // the runner's
    std::unique_ptr<store::SegmentStore> store_;
};

}  // namespace lazyattn::engine
