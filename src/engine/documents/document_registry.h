// DocumentRegistry: the documents behind /v1/documents, per tenant (a tenant sees, reuses and
// pins only its own). A document is a segment known by a keyed hash of its content under the
// tenant's segment seed; it is registered when a request reads it and forgotten once evicted,
// unless pinned. Pinning holds a reference on each of its blocks so eviction never takes it;
// pins are counted (each pin needs its unpin) and capped: all pins together at
// max_pinned_fraction of the pool, one account's (an API key's, over all its cache_salts:
// engine/request/tenant.h) at its quota, so requests always keep room to run.
//
// The Scheduler owns it, on the KV manager's pool, and the serving engine reaches it through
// Scheduler::documents(); the KvManager is handed its pins (admission counts a tenant's pinned
// documents as present). Engine thread only, except pins(), whose ledger locks itself (requests
// are checked against it on the callers' threads).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/documents/pin_ledger.h"
#include "engine/engine_config.h"
#include "engine/request/conditioning_key.h"
#include "kv/kv_cache.h"

namespace lazyattn::engine {

struct SequenceState;

// A neighbour-conditioned copy of a document (DocumentReuse::neighbours) the engine made in the
// background, with what it was encoded after: enough to make it again (the same neighbours, cut to
// the same length, in the same order).
struct ConditionedCopyInfo {
    int32_t neighbours = 0;                  // K
    ConditioningKey key;                     // its name in RAM and the store (conditioning_key.h)
    std::vector<std::string> neighbour_ids;  // the neighbours' document ids, in the order read
    int32_t prefix_tokens = 0;               // tokens of them read before the document
    bool cached = false;                     // in the RAM cache now (the store keeps its own)
    bool stored = false;                     // handed to the --kv-store tiers
};

// A document (segment) the cache knows, as GET /v1/documents lists it.
struct DocumentInfo {
    std::string id;  // hex of a keyed hash of the segment's chain (model, KV variant, tenant)
    int32_t num_tokens = 0;
    bool pinned = false;
    int32_t pin_count = 0;                         // pins held by its tenant; each needs an unpin
    double last_used_ms = 0;                       // steady-clock milliseconds of the last request that read it
    std::vector<ConditionedCopyInfo> conditioned;  // its conditioned copies made in the background
};

class DocumentRegistry {
public:
    // The tenant's segment seed (KvManager::seeds_for(tenant).segment).
    using SeedOf = std::function<kv::BlockHash(const std::string& tenant)>;
    // A document was pinned for the first time: its blocks (kept in the store too:
    // KvStoreAdapter::write_pinned).
    using OnPinned = std::function<void(const std::string& tenant, const std::vector<int32_t>& tokens,
                                        const std::vector<kv::BlockId>&)>;

    DocumentRegistry(kv::KvCache& kv, const EngineConfig& config, SeedOf seed_of, OnPinned on_pinned);
    // The chain seed of a document's conditioned copy named `key` from its plain seed
    // (reuse/conditioning.h's conditioned_seed, which this folder does not import): how the
    // list tells whether a conditioned copy is still cached.
    using ConditionedSeed = std::function<kv::BlockHash(const kv::BlockHash& seed, const ConditioningKey& key)>;
    void set_conditioned_seed(ConditionedSeed f) { conditioned_seed_ = std::move(f); }

    std::string id(const std::string& tenant, const std::vector<int32_t>& tokens) const;
    // The document must be cached already (kNotFound otherwise: run a request containing it
    // first); a pin beyond max_pinned_fraction of the pool or the tenant's quota is
    // kResourceExhausted. Unknown ids, and ids of other tenants, give kNotFound.
    Expected<DocumentInfo> pin(const std::string& tenant, const std::vector<int32_t>& tokens);
    Status unpin(const std::string& tenant, const std::string& id);
    // The tenant's documents still cached (pinned or not), most recently used first.
    std::vector<DocumentInfo> list(const std::string& tenant);
    // Every tenant's, as list() gives them.
    std::map<std::string, std::vector<DocumentInfo>> list_all();
    // The tokens of a known cached document of the tenant (a request may name it by id alone).
    std::optional<std::vector<int32_t>> tokens(const std::string& tenant, const std::string& id) const;

    // Registers s's documents as used now (plain documents only: anchored and conditioned ones
    // are cached as other encodings, not under the registry's seed).
    void note(const SequenceState& s);
    // A conditioned copy of `tenant`'s document `tokens` was made in the background (listed with
    // the document while it is cached).
    void note_conditioned(const std::string& tenant, const std::vector<int32_t>& tokens, ConditionedCopyInfo copy);
    // Changes when a document is first registered, a conditioned copy is made, it is pinned or unpinned (not when one is merely
    // used or evicted).
    uint64_t version() const { return version_; }
    // Documents remembered over every tenant (bounded: pruned past twice the pool's blocks).
    int64_t num_entries() const { return num_entries_; }
    const PinLedger& pins() const { return pins_; }
    // Every pinned block, once per pin held (KvManager::check_integrity counts references).
    void for_each_pinned_block(const std::function<void(kv::BlockId)>& f) const;

private:
    struct Entry {
        std::vector<int32_t> tokens;
        kv::BlockHash chain_end;                 // names it in the pin ledger
        std::vector<kv::BlockId> pinned_blocks;  // one reference each while pin_count > 0
        int32_t pin_count = 0;
        double last_used_ms = 0;
        std::vector<ConditionedCopyInfo> conditioned;
    };

    void prune();
    // Whether entry e of the tenant with segment seed `seed` is still worth listing: pinned, or
    // a copy of it (plain or conditioned) still cached. Fills e's conditioned copies' `cached`.
    bool still_cached(const kv::BlockHash& seed, Entry& e) const;
    Status check_pin_room(const std::string& tenant, int32_t num_new) const;
    static DocumentInfo info(const std::string& id, const Entry& e);
    Entry& entry(const std::string& tenant, const std::vector<int32_t>& tokens);

    kv::KvCache& kv_;
    EngineConfig config_;
    SeedOf seed_of_;
    OnPinned on_pinned_;
    ConditionedSeed conditioned_seed_;
    PinLedger pins_;
    std::map<std::string, std::map<std::string, Entry>> entries_;  // tenant -> id -> entry
    uint64_t version_ = 0;
    int64_t num_entries_ = 0;
};

}  // namespace lazyattn::engine
