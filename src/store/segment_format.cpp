#include "store/segment_format.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

namespace lazyattn::store {
namespace {

// The fixed header; every field little-endian (the hosts we build for are; see the static_assert).
struct SegmentHeader {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;  // sizeof(SegmentHeader): a later version may grow it
    uint64_t model_low, model_high;
    uint64_t variant;
    int32_t k_dtype;
    int32_t block_size;
    int32_t num_layers;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t num_tokens;
    int32_t num_blocks;
    int32_t v_dtype;
    uint64_t data_bytes;
    uint8_t reserved[48];
};
static_assert(sizeof(SegmentHeader) == 128);
static_assert(std::endian::native == std::endian::little, "the segment format is little-endian");

constexpr size_t kChecksumBytes = 16;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

SegmentHeader header_for(const SegmentMeta& m) {
    SegmentHeader h{};
    std::memcpy(h.magic, kSegmentMagic, sizeof h.magic);
    h.version = kSegmentVersion;
    h.header_bytes = sizeof(SegmentHeader);
    h.model_low = m.model.low;
    h.model_high = m.model.high;
    h.variant = m.variant;
    h.k_dtype = int32_t(m.k_dtype);
    h.v_dtype = int32_t(m.v_dtype);
    h.block_size = m.block_size;
    h.num_layers = m.num_layers;
    h.num_kv_heads = m.num_kv_heads;
    h.head_dim = m.head_dim;
    h.num_tokens = int32_t(m.tokens.size());
    h.num_blocks = m.num_blocks();
    h.data_bytes = uint64_t(m.data_bytes());
    return h;
}

// A header's type field by name; a number no type has (a damaged or future entry) as itself.
std::string dtype_name(int32_t t) {
    return t >= 0 && t <= int32_t(kv::KvDtype::kQ4_0) ? kernels::kv_dtype_name(kv::KvDtype(t)) : std::to_string(t);
}

size_t tokens_bytes(size_t num_tokens) { return round_up(num_tokens * sizeof(int32_t), 64); }

std::string describe(const SegmentHeader& h) {
    return "layers " + std::to_string(h.num_layers) + ", kv heads " + std::to_string(h.num_kv_heads) + ", head dim " +
           std::to_string(h.head_dim) + ", block " + std::to_string(h.block_size) + ", K " + dtype_name(h.k_dtype) +
           ", V " + dtype_name(h.v_dtype);
}

}  // namespace

int64_t SegmentMeta::block_bytes() const {
    const int64_t rows = int64_t(num_kv_heads) * block_size;
    return int64_t(num_layers) * rows * (kernels::kv_bytes(k_dtype, head_dim) + kernels::kv_bytes(v_dtype, head_dim));
}

SegmentMeta segment_meta(const Fingerprint& model, uint64_t variant, const kv::KvShape& shape,
                         std::vector<int32_t> tokens) {
    SegmentMeta m;
    m.model = model;
    m.variant = variant;
    m.k_dtype = shape.k_dtype;
    m.v_dtype = shape.v_dtype;
    m.block_size = shape.block_size;
    m.num_layers = shape.num_layers;
    m.num_kv_heads = shape.num_kv_heads;
    m.head_dim = shape.head_dim;
    m.tokens = std::move(tokens);
    return m;
}

uint64_t segment_variant(bool keys_rotated, const std::string& tenant, std::string_view conditioning) {
    std::string s = std::string(keys_rotated ? "rotated" : "raw") + '\0' + tenant;
    if (!conditioning.empty()) s += std::string(1, '\0') + std::string(conditioning);
    return XXH3_64bits(s.data(), s.size());
}

std::string segment_key(const SegmentMeta& m) {
    const SegmentHeader h = header_for(m);
    XXH3_state_t* st = XXH3_createState();
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, &h, sizeof h);
    XXH3_128bits_update(st, m.tokens.data(), m.tokens.size() * sizeof(int32_t));
    const XXH128_hash_t d = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)d.high64, (unsigned long long)d.low64);
    return buf;
}

size_t segment_data_offset(const SegmentMeta& m) { return sizeof(SegmentHeader) + tokens_bytes(m.tokens.size()); }

size_t segment_total_bytes(const SegmentMeta& m) {
    return segment_data_offset(m) + size_t(m.data_bytes()) + kChecksumBytes;
}

int64_t segment_max_bytes(const kv::KvShape& shape, int64_t max_tokens) {
    const int64_t tokens = std::min(max_tokens, int64_t(shape.num_blocks) * shape.block_size);
    const int64_t blocks = (tokens + shape.block_size - 1) / shape.block_size;
    return int64_t(sizeof(SegmentHeader) + tokens_bytes(size_t(tokens)) + kChecksumBytes) +
           blocks * shape.bytes_per_block();
}

std::vector<uint8_t> begin_segment(const SegmentMeta& m) {
    std::vector<uint8_t> out(segment_total_bytes(m), 0);
    const SegmentHeader h = header_for(m);
    std::memcpy(out.data(), &h, sizeof h);
    std::memcpy(out.data() + sizeof h, m.tokens.data(), m.tokens.size() * sizeof(int32_t));
    return out;
}

uint8_t* data_of(std::vector<uint8_t>& segment, const SegmentMeta& m) {
    return segment.data() + segment_data_offset(m);
}

void seal_segment(std::span<uint8_t> segment) {
    const size_t body = segment.size() - kChecksumBytes;
    const XXH128_hash_t d = XXH3_128bits(segment.data(), body);
    std::memcpy(segment.data() + body, &d.low64, 8);
    std::memcpy(segment.data() + body + 8, &d.high64, 8);
}

Expected<const uint8_t*> verify_segment(std::span<const uint8_t> bytes, const SegmentMeta& expected) {
    if (bytes.size() < sizeof(SegmentHeader) + kChecksumBytes) {
        return corrupt("segment entry of " + std::to_string(bytes.size()) + " bytes is truncated");
    }
    SegmentHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    if (std::memcmp(h.magic, kSegmentMagic, sizeof h.magic) != 0) return corrupt("not a segment entry (bad magic)");
    if (h.version != kSegmentVersion || h.header_bytes != sizeof(SegmentHeader)) {
        return unsupported("segment entry of format version " + std::to_string(h.version) + " (this build reads " +
                           std::to_string(kSegmentVersion) + ")");
    }
    // Layout first: a sound entry of another layout is foreign, and sizes are then computed from
    // the expected meta only (header fields never enter a size computation, so none overflows).
    const SegmentHeader want = header_for(expected);
    if (h.k_dtype != want.k_dtype || h.v_dtype != want.v_dtype || h.block_size != want.block_size ||
        h.num_layers != want.num_layers || h.num_kv_heads != want.num_kv_heads || h.head_dim != want.head_dim) {
        return unsupported("segment entry layout (" + describe(h) + ") differs from the pool's (" + describe(want) +
                           ")");
    }
    if (h.num_tokens != want.num_tokens) return unsupported("segment entry holds another token count");
    if (h.num_blocks != want.num_blocks || h.data_bytes != want.data_bytes ||
        segment_total_bytes(expected) != bytes.size()) {
        return corrupt("segment entry is truncated or its sizes disagree (" + std::to_string(bytes.size()) +
                       " bytes; expected " + std::to_string(segment_total_bytes(expected)) + ")");
    }
    const size_t body = bytes.size() - kChecksumBytes;
    const XXH128_hash_t d = XXH3_128bits(bytes.data(), body);
    uint64_t low, high;
    std::memcpy(&low, bytes.data() + body, 8);
    std::memcpy(&high, bytes.data() + body + 8, 8);
    if (low != d.low64 || high != d.high64) return corrupt("segment entry checksum mismatch");
    if (h.model_low != expected.model.low || h.model_high != expected.model.high) {
        return unsupported("segment entry was computed by another model (fingerprint differs)");
    }
    if (h.variant != want.variant) return unsupported("segment entry is of another KV variant or tenant");
    if (std::memcmp(bytes.data() + sizeof h, expected.tokens.data(), expected.tokens.size() * sizeof(int32_t)) != 0) {
        return unsupported("segment entry holds other tokens (a key collision)");
    }
    return bytes.data() + segment_data_offset(expected);
}

}  // namespace lazyattn::store
