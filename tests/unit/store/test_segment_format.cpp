// The segment format and the block export/import pair: round trips through a pool of every KV
// dtype, and every kind of damage (truncation, flipped bytes, another model, other tokens, other
// layout) refused before any byte is used.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/kv_memory.h"
#include "store/segment_blocks.h"
#include "store/segment_format.h"
#include "store_test_util.h"

namespace lazyattn::store {
namespace {

using testing::fill_random;

kv::KvShape shape_of(kv::KvDtype dtype, int32_t block_size = 16) {
    kv::KvShape s;
    s.num_layers = 3;
    s.num_blocks = 12;
    s.num_kv_heads = 2;
    s.block_size = block_size;
    s.head_dim = 8;
    s.set_types(kernels::same_kv_types(dtype));
    return s;
}

std::vector<int32_t> tokens(int32_t n, int32_t base = 100) {
    std::vector<int32_t> t(n);
    for (int32_t i = 0; i < n; ++i) t[i] = base + i * 7;
    return t;
}

// One token row of one head of one layer (K or V) of a block, as bytes.
std::vector<uint8_t> row_of(const backend::HostKvMemory& kv, bool key, int32_t layer, int32_t block, int32_t head,
                            int32_t row) {
    const kv::KvShape& s = kv.shape();
    const int64_t rb = key ? s.k_row_bytes() : s.v_row_bytes();
    const int64_t off = ((int64_t(block) * s.num_kv_heads + head) * s.block_size + row) * rb;
    const auto* base = static_cast<const uint8_t*>(key ? kv.k(layer) : kv.v(layer));
    return {base + off, base + off + rb};
}

std::vector<uint8_t> encode(const SegmentMeta& m, const backend::HostKvMemory& kv,
                            const std::vector<kv::BlockId>& blocks) {
    auto bytes = begin_segment(m);
    EXPECT_TRUE(export_segment_blocks(kv, blocks, int32_t(m.tokens.size()), data_of(bytes, m)).ok());
    seal_segment(bytes);
    return bytes;
}

const Fingerprint kModel{0x1234, 0x5678};

TEST(SegmentFormat, RoundTripsThroughThePoolForEveryDtypeAndLength) {
    for (kv::KvDtype dtype : {kv::KvDtype::kF32, kv::KvDtype::kF16, kv::KvDtype::kBF16}) {
        for (int32_t n : {1, 15, 16, 17, 40}) {
            backend::HostKvMemory src(shape_of(dtype)), dst(shape_of(dtype));
            fill_random(src, 1);
            fill_random(dst, 2);
            const int32_t nb = (n + 15) / 16;
            std::vector<kv::BlockId> from, to;
            for (int32_t i = 0; i < nb; ++i) {
                from.push_back(11 - 2 * i);  // scattered, out of order
                to.push_back(i + 1);
            }
            const SegmentMeta m = segment_meta(kModel, segment_variant(true, ""), src.shape(), tokens(n));
            const auto bytes = encode(m, src, from);
            ASSERT_EQ(bytes.size(), segment_total_bytes(m));
            auto data = verify_segment(bytes, m);
            ASSERT_TRUE(data.ok()) << data.status().to_string();
            EXPECT_TRUE(import_segment_blocks(dst, to, *data).ok());
            for (int32_t l = 0; l < 3; ++l) {
                for (int32_t t = 0; t < n; ++t) {
                    for (int32_t h = 0; h < 2; ++h) {
                        for (bool key : {true, false}) {
                            ASSERT_EQ(row_of(src, key, l, from[t / 16], h, t % 16),
                                      row_of(dst, key, l, to[t / 16], h, t % 16))
                                << "dtype " << int(dtype) << " n " << n << " layer " << l << " token " << t;
                        }
                    }
                }
            }
        }
    }
}

TEST(SegmentFormat, PaddingIsZeroSoTwoWritersWriteTheSameBytes) {
    backend::HostKvMemory a(shape_of(kv::KvDtype::kF16)), b(shape_of(kv::KvDtype::kF16));
    fill_random(a, 3);
    fill_random(b, 4);
    const std::vector<kv::BlockId> blocks = {0, 1};
    // Same 20 tokens of KV in both pools, different stale padding rows.
    const SegmentMeta m = segment_meta(kModel, 7, a.shape(), tokens(20));
    std::vector<uint8_t> ea = encode(m, a, blocks);
    EXPECT_TRUE(import_segment_blocks(b, blocks, *verify_segment(ea, m)).ok());
    fill_random(b, 5);
    EXPECT_TRUE(import_segment_blocks(b, blocks, *verify_segment(ea, m)).ok());
    EXPECT_EQ(encode(m, b, blocks), ea);
}

TEST(SegmentFormat, ImportSkipsBlocksAlreadyPresent) {
    backend::HostKvMemory src(shape_of(kv::KvDtype::kF32)), dst(shape_of(kv::KvDtype::kF32));
    fill_random(src, 1);
    fill_random(dst, 2);
    const SegmentMeta m = segment_meta(kModel, 7, src.shape(), tokens(40));
    const auto bytes = encode(m, src, {0, 1, 2});
    const auto before = row_of(dst, true, 1, 5, 0, 3);
    EXPECT_TRUE(import_segment_blocks(dst, std::vector<kv::BlockId>{5, 6, 7}, *verify_segment(bytes, m), 1).ok());
    EXPECT_EQ(row_of(dst, true, 1, 5, 0, 3), before);                           // present: untouched
    EXPECT_EQ(row_of(dst, false, 2, 6, 1, 4), row_of(src, false, 2, 1, 1, 4));  // imported
}

TEST(SegmentFormat, RefusesDamagedAndForeignEntries) {
    backend::HostKvMemory kv(shape_of(kv::KvDtype::kF16));
    fill_random(kv, 1);
    const SegmentMeta m = segment_meta(kModel, 9, kv.shape(), tokens(33));
    const auto good = encode(m, kv, {0, 1, 2});
    ASSERT_TRUE(verify_segment(good, m).ok());

    // Truncated anywhere, or extended.
    for (size_t n : {size_t(0), size_t(10), size_t(127), size_t(128), good.size() / 2, good.size() - 1}) {
        auto st = verify_segment(std::span(good.data(), n), m).status();
        EXPECT_EQ(st.code(), StatusCode::kCorrupt) << n;
    }
    auto longer = good;
    longer.push_back(0);
    EXPECT_EQ(verify_segment(longer, m).status().code(), StatusCode::kCorrupt);
    // Any flipped byte: header, tokens, data or checksum.
    for (size_t at : {size_t(3), size_t(20), size_t(130), good.size() / 2, good.size() - 1}) {
        auto bad = good;
        bad[at] ^= 0x40;
        EXPECT_FALSE(verify_segment(bad, m).ok()) << at;
    }
    // Sound entries that are not this segment: another model, variant, dtype, block size, tokens.
    SegmentMeta other = m;
    other.model.high ^= 1;
    EXPECT_EQ(verify_segment(good, other).status().code(), StatusCode::kUnsupported);
    other = m;
    other.variant = segment_variant(false, "");
    EXPECT_EQ(verify_segment(good, other).status().code(), StatusCode::kUnsupported);
    // An entry of another K or V type is never misread as this pool's (its bytes would decode).
    for (const kernels::KvTypes t :
         {kernels::KvTypes{kv::KvDtype::kQ8_0, m.v_dtype}, kernels::KvTypes{m.k_dtype, kv::KvDtype::kBF16}}) {
        other = m;
        other.k_dtype = t.k;
        other.v_dtype = t.v;
        const auto refused = verify_segment(good, other);
        EXPECT_EQ(refused.status().code(), StatusCode::kUnsupported);
        EXPECT_NE(refused.status().message().find(t.k == m.k_dtype ? "V bf16" : "K q8_0"), std::string::npos)
            << refused.status().message();
    }
    other = m;
    other.tokens[5] += 1;
    EXPECT_EQ(verify_segment(good, other).status().code(), StatusCode::kUnsupported);
    // A header claiming a huge size over a small buffer is refused without reading past it.
    auto huge = good;
    const int32_t big = 1 << 23;
    std::memcpy(huge.data() + 8 + 4 + 4 + 24 + 4 * 5, &big, 4);  // num_tokens
    EXPECT_FALSE(verify_segment(huge, m).ok());
}

TEST(SegmentFormat, KeysDifferByEverythingTheKvDependsOn) {
    const kv::KvShape s = shape_of(kv::KvDtype::kF16);
    const SegmentMeta m = segment_meta(kModel, segment_variant(true, ""), s, tokens(20));
    SegmentMeta a = m, b = m, c = m, d = m, e = m;
    a.model.low ^= 1;
    b.variant = segment_variant(true, "tenant");
    c.k_dtype = kv::KvDtype::kQ8_0;
    d.tokens.pop_back();
    e.v_dtype = kv::KvDtype::kQ4_0;
    const std::string k = segment_key(m);
    EXPECT_EQ(k.size(), 32u);
    EXPECT_EQ(segment_key(m), k);
    for (const SegmentMeta& x : {a, b, c, d, e}) EXPECT_NE(segment_key(x), k);
    EXPECT_NE(segment_variant(true, ""), segment_variant(false, ""));
}

// The bound a network tier reads up to (TierOptions::max_entry_bytes, set by the engine): exactly a
// segment of the context length, or of the whole pool when that is smaller, for every KV type and
// an uneven last block.
TEST(SegmentFormat, TheLargestEntryIsASegmentOfTheContextOrThePool) {
    for (const kv::KvDtype dtype : {kv::KvDtype::kF32, kv::KvDtype::kF16, kv::KvDtype::kQ8_0, kv::KvDtype::kQ4_0}) {
        kv::KvShape s = shape_of(dtype);
        s.num_blocks = 37;
        const std::vector<int32_t> full(size_t(s.num_blocks) * size_t(s.block_size), 7);
        EXPECT_EQ(int64_t(segment_total_bytes(segment_meta(kModel, 1, s, full))), segment_max_bytes(s, 1 << 20));
        const std::vector<int32_t> context(full.size() - 5, 7);  // a context shorter than the pool
        EXPECT_EQ(int64_t(segment_total_bytes(segment_meta(kModel, 1, s, context))),
                  segment_max_bytes(s, int64_t(context.size())));
    }
}

}  // namespace
}  // namespace lazyattn::store
