// The segment KV format: one document's KV as it lies in the pool, with everything needed to
// prove it belongs to this model before a single block is used.
//
//   SegmentHeader (128 bytes, little-endian)
//   token ids     int32[num_tokens], zero-padded to a multiple of 64 bytes
//   KV data       block after block, each [layer][K, V][num_kv_heads, block_size, head_dim]
//                 elements of `k_dtype` / `v_dtype` (KvMemory::read_block's layout, the pool's
//                 rows, q8_0 / q4_0 scales included); the padding rows of the last block are zero
//   checksum      XXH3-128 of every byte before it (16 bytes)
//
// Under LazyAttention a document's KV depends only on the model, the KV variant (element type,
// keys rotated or raw, tenant) and its tokens, so an entry is keyed by exactly those
// (segment_key) and verified against all of them (verify_segment) before it is read.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "kv/kv_shape.h"

namespace lazyattn::store {

inline constexpr char kSegmentMagic[8] = {'L', 'A', 'Z', 'Y', 'K', 'V', 'S', 'G'};
// Version 2: K and V element types in the header (version 1 had one; its entries are misses).
// Version 3: the model fingerprint hashes every config field exactly (model_fingerprint.h);
// version 2's hashed a description that rounded floats, so its entries may belong to a model
// differing in rope base, norm eps or attention scale: misses, never read.
inline constexpr uint32_t kSegmentVersion = 3;

struct Fingerprint {  // XXH3-128 of the model (model_fingerprint.h)
    uint64_t low = 0, high = 0;
    bool operator==(const Fingerprint&) const = default;
};

// What an entry must match to be used: the model, the KV variant and layout, the tokens.
struct SegmentMeta {
    Fingerprint model;
    uint64_t variant = 0;  // hash of (keys rotated or raw, tenant, conditioning): see segment_variant()
    kv::KvDtype k_dtype = kv::KvDtype::kF16;
    kv::KvDtype v_dtype = kv::KvDtype::kF16;
    int32_t block_size = 16;
    int32_t num_layers = 0;
    int32_t num_kv_heads = 0;
    int32_t head_dim = 0;
    std::vector<int32_t> tokens;

    int32_t num_blocks() const { return int32_t((int64_t(tokens.size()) + block_size - 1) / block_size); }
    int64_t block_bytes() const;  // one block: K and V of every layer
    int64_t data_bytes() const { return int64_t(num_blocks()) * block_bytes(); }
};

// The meta of a segment of `tokens` stored from a pool of `shape`.
SegmentMeta segment_meta(const Fingerprint& model, uint64_t variant, const kv::KvShape& shape,
                         std::vector<int32_t> tokens);
// Hash of how the keys are stored and whose cache it is (tenants never read each other's entries).
// `conditioning` not empty: the document's copy conditioned on neighbours, named by what it was
// encoded after (engine::ConditioningKey::name(): K, the neighbours' content hashes in order, the
// prefix length), an entry of its own; empty is the plain copy (the same variant as before
// conditioning existed). Entries an older build wrote under "neighbours=K" alone have a variant
// no name gives now: misses, never read, aged out by the tiers' own eviction.
uint64_t segment_variant(bool keys_rotated, const std::string& tenant, std::string_view conditioning = {});
// The store key: 32 hex digits of XXH3-128 over everything in the meta (tokens included).
std::string segment_key(const SegmentMeta& meta);

// Offsets inside an encoded segment.
size_t segment_data_offset(const SegmentMeta& meta);
size_t segment_total_bytes(const SegmentMeta& meta);
// The largest entry a pool of `shape` writes or reads for segments of at most `max_tokens` (the
// context length): a segment of that length, or filling every block of the pool if smaller. A
// network tier's reply past it is no entry of this engine (TierOptions::max_entry_bytes).
int64_t segment_max_bytes(const kv::KvShape& shape, int64_t max_tokens);

// An entry's bytes with header and tokens written, the KV data zeroed (to be filled through
// data_of()) and the checksum not yet computed (seal_segment()).
std::vector<uint8_t> begin_segment(const SegmentMeta& meta);
uint8_t* data_of(std::vector<uint8_t>& segment, const SegmentMeta& meta);
// Writes the checksum (the writer thread does this, off the inference thread).
void seal_segment(std::span<uint8_t> segment);

// Checks an entry before use: size, magic, version, checksum, then that model, variant, layout
// and tokens are those of `expected`. Returns the KV data (inside `bytes`). kCorrupt for damage
// (truncated, bad checksum, nonsense header); kUnsupported for a sound entry of another model,
// variant, layout or token list (a "foreign" entry); either way nothing of it may be used.
Expected<const uint8_t*> verify_segment(std::span<const uint8_t> bytes, const SegmentMeta& expected);

}  // namespace lazyattn::store
