// Malformed GGUF input: every kind of damage gives one Status naming what is wrong, never a
// crash, an over-read or a huge allocation. Files are built with GgufWriter and then damaged one
// field at a time; truncated copies live in exactly-sized heap buffers, so a sanitizer build
// (LAZYATTN_SANITIZE) also catches any read past the end.
#include <gtest/gtest.h>

#include <limits>

#include "allocation_tracker.h"
#include "loader/gguf_file.h"
#include "loader/gguf_writer.h"
#include "loader/quantize.h"
#include "loader_test_util.h"

namespace lazyattn::loader {
namespace {

using test::append_gguf_string;
using test::append_le;
using test::find_tensor_info;
using test::get_le;
using test::put_le;

// A small valid file whose last tensor ends exactly at the end of the file (no trailing
// padding), so that cutting off any suffix damages something the parser must notice.
std::vector<uint8_t> small_file() {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_string_array("tokenizer.ggml.tokens", {"a", "bc", "Ġd"});
    w.add_u32("llama.block_count", 2);
    w.add_f32("llama.rope.freq_base", 10000.0f);
    w.add_tensor_f32("t.first", {8}, std::vector<float>(8, 1.0f));
    std::vector<float> v(64, 0.5f);
    w.add_tensor("t.q8", {32, 2}, GgmlType::kQ8_0, quantize(GgmlType::kQ8_0, v.data(), 64).value());
    w.add_tensor_f32("t.last", {16}, std::vector<float>(16, 2.0f));
    std::vector<uint8_t> bytes = w.to_bytes();
    return bytes;
}

Status parse_status(const std::vector<uint8_t>& bytes) {
    // Copy into an exactly-sized buffer so nothing past `size` is addressable by accident.
    std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size() + (bytes.empty() ? 1 : 0)]);
    if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
    auto f = GgufFile::parse(copy.get(), bytes.size());
    return f.ok() ? Status() : f.status();
}

void expect_error(const std::vector<uint8_t>& bytes, StatusCode code, const std::string& fragment) {
    const Status st = parse_status(bytes);
    ASSERT_FALSE(st.ok()) << "expected an error mentioning '" << fragment << "'";
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(fragment), std::string::npos)
        << "message '" << st.message() << "' does not mention '" << fragment << "'";
}

std::vector<uint8_t> header(uint32_t version, uint64_t num_tensors, uint64_t num_kv) {
    std::vector<uint8_t> b = {'G', 'G', 'U', 'F'};
    append_le<uint32_t>(b, version);
    append_le<uint64_t>(b, num_tensors);
    append_le<uint64_t>(b, num_kv);
    return b;
}

TEST(GgufErrors, SmallFileIsValid) {
    const std::vector<uint8_t> bytes = small_file();
    EXPECT_TRUE(parse_status(bytes).ok()) << parse_status(bytes).to_string();
    EXPECT_EQ(bytes.size() % 32, 0u);
}

TEST(GgufErrors, TruncatedAtEveryOffset) {
    const std::vector<uint8_t> bytes = small_file();
    for (size_t len = 0; len < bytes.size(); ++len) {
        const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(len));
        const Status st = parse_status(cut);
        ASSERT_FALSE(st.ok()) << "prefix of " << len << " of " << bytes.size() << " bytes parsed";
        ASSERT_EQ(st.code(), StatusCode::kCorrupt) << len << ": " << st.to_string();
    }
}

TEST(GgufErrors, BadMagic) {
    std::vector<uint8_t> bytes = small_file();
    bytes[0] = 'g';
    expect_error(bytes, StatusCode::kCorrupt, "magic is 'gGUF'");
    expect_error({}, StatusCode::kCorrupt, "not a GGUF file");
    expect_error({'G', 'G', 'U'}, StatusCode::kCorrupt, "not a GGUF file");
}

TEST(GgufErrors, Versions) {
    std::vector<uint8_t> bytes = small_file();
    put_le<uint32_t>(bytes, 4, 1);
    expect_error(bytes, StatusCode::kUnsupported, "version 1");
    put_le<uint32_t>(bytes, 4, 4);
    expect_error(bytes, StatusCode::kUnsupported, "version 4");
    put_le<uint32_t>(bytes, 4, 0x03000000u);  // 3 written big-endian
    expect_error(bytes, StatusCode::kUnsupported, "big-endian");
}

TEST(GgufErrors, BadAlignment) {
    for (uint32_t a : {0u, 3u, 48u, 0x80000001u}) {
        GgufWriter w;
        w.add_u32("general.alignment", a);
        w.add_tensor_f32("t", {8}, std::vector<float>(8, 0.0f));
        expect_error(w.to_bytes(), StatusCode::kCorrupt, "general.alignment " + std::to_string(a));
    }
    GgufWriter s;
    s.add_string("general.alignment", "32");
    expect_error(s.to_bytes(), StatusCode::kCorrupt, "general.alignment has type string");
    GgufWriter neg;
    neg.add_i32("general.alignment", -32);
    expect_error(neg.to_bytes(), StatusCode::kCorrupt, "general.alignment -32");
}

TEST(GgufErrors, TensorOutOfBounds) {
    std::vector<uint8_t> bytes = small_file();
    const auto p = find_tensor_info(bytes, "t.last");
    put_le<uint64_t>(bytes, p.dims, 17);  // one float more than the file holds
    const Status st = parse_status(bytes);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kCorrupt);
    const uint64_t end = bytes.size() + 4;
    EXPECT_NE(st.message().find("tensor 't.last': data [" + std::to_string(end - 68) + ", " + std::to_string(end) +
                                ") extends past end of file (size " + std::to_string(bytes.size()) + ")"),
              std::string::npos)
        << st.message();

    std::vector<uint8_t> far = small_file();
    put_le<uint64_t>(far, find_tensor_info(far, "t.first").offset, uint64_t{1} << 40);
    expect_error(far, StatusCode::kCorrupt, "extends past end of file");
    std::vector<uint8_t> wrap = small_file();
    put_le<uint64_t>(wrap, find_tensor_info(wrap, "t.first").offset, ~uint64_t{31});
    expect_error(wrap, StatusCode::kCorrupt, "overflows");
}

TEST(GgufErrors, UnalignedAndOverlappingOffsets) {
    std::vector<uint8_t> bytes = small_file();
    put_le<uint64_t>(bytes, find_tensor_info(bytes, "t.q8").offset, 36);
    expect_error(bytes, StatusCode::kCorrupt, "tensor 't.q8': data offset 36 is not a multiple of the alignment 32");

    std::vector<uint8_t> overlap = small_file();
    put_le<uint64_t>(overlap, find_tensor_info(overlap, "t.last").offset,
                     64);  // inside t.q8 [32, 100)
    expect_error(overlap, StatusCode::kCorrupt, "overlaps tensor 't.q8'");
}

TEST(GgufErrors, HugeCountsFailBeforeAllocating) {
    struct Case {
        std::vector<uint8_t> bytes;
        std::string fragment;
    };
    std::vector<Case> cases;
    std::vector<uint8_t> padding(64, 0);
    auto tensors = header(3, uint64_t{1} << 60, 0);
    tensors.insert(tensors.end(), padding.begin(), padding.end());
    cases.push_back({tensors, "tensors"});
    auto kvs = header(3, 0, uint64_t{1} << 60);
    kvs.insert(kvs.end(), padding.begin(), padding.end());
    cases.push_back({kvs, "metadata entries"});
    auto array = header(3, 0, 1);
    append_gguf_string(array, "tokenizer.ggml.tokens");
    append_le<uint32_t>(array, 9);
    append_le<uint32_t>(array, 8);
    append_le<uint64_t>(array, uint64_t{1} << 60);
    array.insert(array.end(), padding.begin(), padding.end());
    cases.push_back({array, "array of 1152921504606846976 string"});
    auto str = header(3, 0, 1);
    append_gguf_string(str, "general.name");
    append_le<uint32_t>(str, 8);
    append_le<uint64_t>(str, uint64_t{1} << 60);
    str.insert(str.end(), padding.begin(), padding.end());
    cases.push_back({str, "string length 1152921504606846976"});
    auto key = header(3, 0, 1);
    append_le<uint64_t>(key, ~uint64_t{0});
    key.insert(key.end(), padding.begin(), padding.end());
    cases.push_back({key, "string length"});

    for (const Case& c : cases) {
        Status st;
        size_t largest = 0;
        {
            test::AllocationTracker tracker;
            st = parse_status(c.bytes);
            largest = tracker.largest();
        }
        ASSERT_FALSE(st.ok()) << c.fragment;
        EXPECT_EQ(st.code(), StatusCode::kCorrupt) << st.to_string();
        EXPECT_NE(st.message().find(c.fragment), std::string::npos) << st.message();
        EXPECT_LT(largest, size_t{1} << 16) << c.fragment;
    }
}

TEST(GgufErrors, UnknownTensorType) {
    std::vector<uint8_t> bytes = small_file();
    put_le<uint32_t>(bytes, find_tensor_info(bytes, "t.q8").type, 99);
    expect_error(bytes, StatusCode::kUnsupported, "tensor 't.q8' has unknown ggml type 99");
    put_le<uint32_t>(bytes, find_tensor_info(bytes, "t.q8").type, 4);  // removed Q4_2
    expect_error(bytes, StatusCode::kUnsupported, "unknown ggml type 4");
}

TEST(GgufErrors, KnownButUndequantizableTypeParses) {
    GgufWriter w;
    w.add_tensor("iq", {256}, static_cast<GgmlType>(16), std::vector<uint8_t>(66, 0));  // IQ2_XXS
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = GgufFile::parse(bytes.data(), bytes.size());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ((*f)->tensors()[0].num_bytes, 66u);
}

TEST(GgufErrors, DuplicateKeysAndTensorNames) {
    GgufWriter w;
    w.add_u32("llama.block_count", 2);
    w.add_string("general.name", "x");
    w.add_u32("llama.block_count", 3);
    expect_error(w.to_bytes(), StatusCode::kCorrupt, "duplicate metadata key 'llama.block_count'");

    GgufWriter t;
    t.add_tensor_f32("w", {8}, std::vector<float>(8, 0.0f));
    t.add_tensor_f32("w", {8}, std::vector<float>(8, 0.0f));
    expect_error(t.to_bytes(), StatusCode::kCorrupt, "duplicate tensor name 'w'");
}

TEST(GgufErrors, BadValues) {
    GgufWriter nested;
    std::vector<uint8_t> payload;
    append_le<uint32_t>(payload, 9);  // array of arrays
    append_le<uint64_t>(payload, 1);
    append_le<uint32_t>(payload, 4);
    append_le<uint64_t>(payload, 1);
    append_le<uint32_t>(payload, 7);
    nested.add_raw("nested", 9, payload);
    expect_error(nested.to_bytes(), StatusCode::kUnsupported, "metadata key 'nested': nested arrays");

    GgufWriter type;
    type.add_raw("weird", 13, {0, 0, 0, 0});
    expect_error(type.to_bytes(), StatusCode::kCorrupt, "metadata key 'weird': unknown value type 13");

    GgufWriter elem;
    std::vector<uint8_t> elem_payload;
    append_le<uint32_t>(elem_payload, 77);
    append_le<uint64_t>(elem_payload, 0);
    elem.add_raw("arr", 9, elem_payload);
    expect_error(elem.to_bytes(), StatusCode::kCorrupt, "unknown array element type 77");

    GgufWriter boolean;
    boolean.add_raw("b", 7, {2});
    expect_error(boolean.to_bytes(), StatusCode::kCorrupt, "metadata key 'b': bool byte");

    GgufWriter key;
    key.add_u32("", 1);
    expect_error(key.to_bytes(), StatusCode::kCorrupt, "empty key");

    // A string inside an array whose length runs past the end.
    GgufWriter inner;
    std::vector<uint8_t> strs;
    append_le<uint32_t>(strs, 8);
    append_le<uint64_t>(strs, 2);
    append_gguf_string(strs, "ok");
    append_le<uint64_t>(strs, 1000);
    strs.insert(strs.end(), {'x', 'y'});
    inner.add_raw("tokenizer.ggml.tokens", 9, strs);
    expect_error(inner.to_bytes(), StatusCode::kCorrupt, "string length 1000");
}

TEST(GgufErrors, BadTensorShapes) {
    std::vector<uint8_t> dims5 = small_file();
    put_le<uint32_t>(dims5, find_tensor_info(dims5, "t.first").n_dims, 5);
    expect_error(dims5, StatusCode::kCorrupt, "tensor 't.first': n_dims 5");

    std::vector<uint8_t> dims0 = small_file();
    put_le<uint32_t>(dims0, find_tensor_info(dims0, "t.first").n_dims, 0);
    expect_error(dims0, StatusCode::kCorrupt, "n_dims 0");

    std::vector<uint8_t> zero = small_file();
    put_le<uint64_t>(zero, find_tensor_info(zero, "t.first").dims, 0);
    expect_error(zero, StatusCode::kCorrupt, "tensor 't.first': dimension 0 is 0");

    std::vector<uint8_t> negative = small_file();
    put_le<int64_t>(negative, find_tensor_info(negative, "t.first").dims, -8);
    expect_error(negative, StatusCode::kCorrupt, "dimension 0 is");

    GgufWriter big;
    big.add_tensor_f32("big", {4, 2}, std::vector<float>(8, 0.0f));
    std::vector<uint8_t> overflow = big.to_bytes();
    const auto p = find_tensor_info(overflow, "big");
    put_le<uint64_t>(overflow, p.dims, uint64_t{1} << 40);
    put_le<uint64_t>(overflow, p.dims + 8, uint64_t{1} << 40);
    expect_error(overflow, StatusCode::kCorrupt, "element count overflows");

    std::vector<uint8_t> partial = small_file();
    put_le<uint64_t>(partial, find_tensor_info(partial, "t.q8").dims, 33);
    expect_error(partial, StatusCode::kCorrupt, "row length 33 is not a multiple of the Q8_0 block size 32");
}

TEST(GgufErrors, OpenPrefixesPath) {
    test::ScratchDir dir;
    const std::string path = dir.file("bad.gguf");
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("NOPE and more", f);
    std::fclose(f);
    auto r = GgufFile::open(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("magic"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace lazyattn::loader
