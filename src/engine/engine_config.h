// Run-time settings of the engine (SyncEngine, ServingEngine); the model's hyperparameters live in ModelConfig.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/device.h"
#include "core/status.h"
#include "engine/request/cache_mode.h"
#include "kv/kv_shape.h"
#include "model/model_config.h"
#include "store/store_tier.h"

namespace lazyattn::engine {

struct EngineConfig {
    // Where the engine computes: the model is loaded on this device's backend
    // (engine::load_model(path, device, ...); --device cpu|cuda).
    backend::Device device = backend::Device::kCpu;
    CacheMode cache_mode = CacheMode::kLazy;
    int32_t block_size = 16;
    int32_t kv_cache_mb = 512;  // the KV pool: K and V of every layer
    // Element types of the KV pool's keys and values. 16-bit types halve the memory per cached
    // token against fp32, q8_0 nearly halves it again (1.9x the documents of f16 in the same
    // pool) and q4_0 again (3.6x); decode reads as many fewer bytes per step.
    kernels::KvTypes kv_types = kernels::same_kv_types(kernels::KvDtype::kF16);
    int32_t kv_num_blocks = 0;       // exact pool size in blocks; 0 = as many as kv_cache_mb holds
    int32_t max_batch_tokens = 512;  // rows per forward step (prefill is chunked to this)
    // Prefill rows a step may carry while running requests decode (0: up to max_batch_tokens).
    // A decode row waits for its whole step, so this bounds the time per output token that new
    // requests' prefill adds (Sarathi-Serve's stall-free batching); prefill still advances every
    // step, so no request starves. Steps without decode rows take max_batch_tokens.
    int32_t max_prefill_while_decoding = 128;
    int32_t max_num_seqs = 64;  // requests admitted (holding KV) at once
    // Recompute selected by the question (@query): the layers whose attention mass scores the
    // document tokens, summed; empty: every layer.
    std::vector<int32_t> query_mass_layers;
    int32_t max_queue = 1024;   // requests waiting for admission before submit() refuses
    int32_t max_model_len = 0;  // 0: the model's context length; else a cap below it (-c, --max-model-len)
    // Pinned documents may hold at most this share of the pool, so requests always keep room
    // to run; a pin beyond it is refused (kResourceExhausted), never queued.
    double max_pinned_fraction = 0.5;
    int32_t max_pinned_blocks_per_tenant = 0;  // 0 = only the global cap
    // Secret key of the cache's block hashes, so clients cannot compute or steer them;
    // 0 = drawn at random when the engine starts (a fixed value is for tests).
    uint64_t cache_hash_key = 0;
    // Benchmark baseline only: key cached segments by (content, logical position), i.e. one copy
    // per document and slot, as a cache of position-rotated keys must.
    bool position_aware_segments = false;
    // The persistent segment store below the RAM pool (--kv-store), looked up in this order on a
    // pool miss and written through: directories and redis://HOST:PORT[/DB] URLs. Empty: none.
    std::vector<std::string> kv_stores;
    store::WriterOptions kv_store_writer;  // --kv-store-max-pending-mib
    store::TierOptions kv_store_tier;      // --kv-store-timeout-ms, --kv-store-max-mib
    // A tier that cannot be reached at start-up: kept and retried (serve), left out or refused
    // (precompute's --unreachable-tier, bench store).
    store::UnreachableTiers kv_store_unreachable = store::UnreachableTiers::kKeep;
    // Conditioned copies made in the background (the `balanced` preset; scheduler/
    // background_conditioning.h): a document that requests reading with neighbours=K@ready found
    // without its conditioned copy in this many requests of a tenant gets that copy made in the
    // step budget requests leave unused. 0: never.
    int32_t condition_after = 0;
    // The most rows of background work one step carries (only in steps without requests' prefill
    // rows): what a request arriving meanwhile may wait for, once, before its own rows run.
    int32_t background_rows_per_step = 64;
    int32_t max_background_queued = 256;             // tasks queued over every tenant
    int32_t max_background_queued_per_account = 16;  // of one API key (all its cache_salts)
#ifdef NDEBUG
    bool check_integrity = false;  // verify the pool and cache index after every step
#else
    bool check_integrity = true;
#endif

    Status validate() const;
};

// The pool shape for a model: as many blocks as fit in pool_bytes.
kv::KvShape kv_shape_for(const model::ModelConfig& model, int32_t block_size, int64_t pool_bytes,
                         kernels::KvTypes types = kernels::same_kv_types(kernels::KvDtype::kF32));

}  // namespace lazyattn::engine
