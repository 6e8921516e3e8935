// The one place KV bytes cross between the block pool and a store entry. An entry's data is its
// blocks in order, each as KvMemory::read_block lays it out (shape.bytes_per_block() bytes,
// [layer][K, V][num_kv_heads, block_size, head_dim]), so any backend's memory (host or device)
// moves through the same two calls.
#pragma once

#include <cstdint>
#include <span>

#include "backend/kv_memory.h"
#include "core/status.h"
#include "kv/block_pool.h"

namespace lazyattn::store {

// Copies the blocks holding a segment of `num_tokens` tokens out of the pool into `out`
// (blocks.size() * bytes_per_block()); rows past num_tokens in the last block are zeroed, so two
// writers of one segment produce the same bytes. The caller holds references on the blocks.
// A backend's read error (a lost device) is returned and `out` is then not to be used.
[[nodiscard]] Status export_segment_blocks(const backend::KvMemory& kv, std::span<const kv::BlockId> blocks,
                                           int32_t num_tokens, uint8_t* out);
// Copies an entry's data into the segment's pool blocks (the caller verified the entry),
// skipping the first `num_present` blocks (already in the pool: a cached head). A write error
// is returned; the blocks then hold no usable KV (the caller recomputes the segment).
[[nodiscard]] Status import_segment_blocks(backend::KvMemory& kv, std::span<const kv::BlockId> blocks,
                                           const uint8_t* in, int32_t num_present = 0);

}  // namespace lazyattn::store
