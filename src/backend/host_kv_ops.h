// The KV-pool and embedding ops on host memory, shared by the CPU and reference backends (they
// differ only in the RoPE they re-rotate keys with). Written for clarity first: stores and
// copies are memory-bound row moves, a small share of a step next to the GEMMs and attention.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"

namespace lazyattn::backend {

// Writes rows of new keys/values ([num_rows, num_kv_heads, head_dim], fp32) of one layer to
// their slots (slot = block * block_size + offset), rounding once to the pool's type.
void host_kv_store(KvMemory& kv, int32_t layer, const float* k_rows, const float* v_rows, const int32_t* slots,
                   int32_t num_rows);

// out[r] = sum over kv heads and dims of (k_rows - K[slot])^2 + (v_rows - V[slot])^2: how far
// freshly computed keys/values ([num_rows, num_kv_heads, head_dim], fp32, keys in the stored
// rotation frame) are from the ones the pool holds at slots[r] in `layer` (read as fp32). What
// CacheBlend's selection ranks document tokens by (DocumentReuse's @deviation).
void host_kv_deviation(const KvMemory& kv, int32_t layer, const float* k_rows, const float* v_rows,
                       const int32_t* slots, int32_t num_rows, float* out);

// Scratch a backend keeps between calls (only one step runs at a time).
struct HostKvScratch {
    std::vector<float> keys;  // the span's copied keys in fp32, [rows, head_dim]
    std::vector<int32_t> positions;
};
// Block-attn's copy of one span in one layer (KvCopyRotateParams): the keys are gathered into
// fp32 rows, rotated by `rotate` (a backend's rope_apply) at position delta, and rounded once
// into the destination blocks; values are copied bit for bit.
void host_kv_copy_rotate(KvMemory& kv, int32_t layer, const KvCopyRotateParams& p,
                         const std::function<void(const kernels::RopeApplyParams&)>& rotate, HostKvScratch& scratch);

// out[r] = table row ids[r] as fp32, times scale.
void host_embedding_lookup(const EmbeddingParams& p);

}  // namespace lazyattn::backend
