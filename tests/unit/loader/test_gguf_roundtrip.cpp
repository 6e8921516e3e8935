// GgufWriter -> GgufFile: every metadata value type, arrays of every element type, tensors of
// several types and ranks, the alignment, and the typed getters' conversions and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "loader/gguf_file.h"
#include "loader/gguf_writer.h"
#include "loader/quantize.h"
#include "loader_test_util.h"

namespace lazyattn::loader {
namespace {

using test::append_gguf_string;
using test::append_le;

// An array payload for GgufWriter::add_raw: element type, count, elements.
template <typename T>
std::vector<uint8_t> array_payload(GgufValueType elem, const std::vector<T>& values) {
    std::vector<uint8_t> p;
    append_le<uint32_t>(p, static_cast<uint32_t>(elem));
    append_le<uint64_t>(p, values.size());
    for (const T& v : values) append_le<T>(p, v);
    return p;
}

std::unique_ptr<GgufFile> parse_ok(const std::vector<uint8_t>& bytes) {
    auto f = GgufFile::parse(bytes.data(), bytes.size());
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    return f.ok() ? std::move(f).value() : nullptr;
}

TEST(GgufRoundTrip, EveryScalarType) {
    GgufWriter w;
    w.add_u8("u8", 200);
    w.add_i8("i8", -100);
    w.add_u16("u16", 60000);
    w.add_i16("i16", -30000);
    w.add_u32("u32", 4000000000u);
    w.add_i32("i32", -2000000000);
    w.add_u64("u64", std::numeric_limits<uint64_t>::max());
    w.add_i64("i64", std::numeric_limits<int64_t>::min());
    w.add_f32("f32", 0.1f);
    w.add_f64("f64", -1e300);
    w.add_bool("t", true);
    w.add_bool("f", false);
    w.add_string("s", std::string("h\0llo", 5));
    w.add_string("empty", "");
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = parse_ok(bytes);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->metadata().size(), 14u);

    EXPECT_EQ(f->find("u8")->type, GgufValueType::kUint8);
    EXPECT_EQ(std::get<uint64_t>(f->find("u8")->value), 200u);
    EXPECT_EQ(f->get_int("u8").value(), 200);
    EXPECT_EQ(f->find("i8")->type, GgufValueType::kInt8);
    EXPECT_EQ(f->get_int("i8").value(), -100);
    EXPECT_EQ(f->get_int("u16").value(), 60000);
    EXPECT_EQ(f->get_int("i16").value(), -30000);
    EXPECT_EQ(f->find("u32")->type, GgufValueType::kUint32);
    EXPECT_EQ(f->get_int("u32").value(), 4000000000LL);
    EXPECT_EQ(f->get_int("i32").value(), -2000000000);
    EXPECT_EQ(std::get<uint64_t>(f->find("u64")->value), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(f->get_int("u64").status().code(), StatusCode::kOutOfRange);
    EXPECT_EQ(f->get_int("i64").value(), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(f->find("f32")->type, GgufValueType::kFloat32);
    EXPECT_EQ(f->get_float("f32").value(), static_cast<double>(0.1f));
    EXPECT_EQ(f->get_float("f64").value(), -1e300);
    EXPECT_EQ(f->get_float("u16").value(), 60000.0);  // integers widen to float
    EXPECT_TRUE(f->get_bool("t").value());
    EXPECT_FALSE(f->get_bool("f").value());
    EXPECT_EQ(f->get_string("s").value(), std::string("h\0llo", 5));
    EXPECT_EQ(f->get_string("empty").value(), "");
}

TEST(GgufRoundTrip, EveryArrayType) {
    GgufWriter w;
    w.add_string_array("strs", {"a", "", "ĠHello", std::string(300, 'x')});
    w.add_f32_array("f32s", {1.5f, -0.0f, 1e-30f});
    w.add_i32_array("i32s", {-1, 0, std::numeric_limits<int32_t>::max()});
    w.add_raw("u8s", 9, array_payload<uint8_t>(GgufValueType::kUint8, {0, 255}));
    w.add_raw("i8s", 9, array_payload<int8_t>(GgufValueType::kInt8, {-128, 127}));
    w.add_raw("u16s", 9, array_payload<uint16_t>(GgufValueType::kUint16, {65535}));
    w.add_raw("i16s", 9, array_payload<int16_t>(GgufValueType::kInt16, {-32768}));
    w.add_raw("u32s", 9, array_payload<uint32_t>(GgufValueType::kUint32, {4000000000u, 7}));
    w.add_raw("u64s", 9, array_payload<uint64_t>(GgufValueType::kUint64, {1ull << 62}));
    w.add_raw("i64s", 9, array_payload<int64_t>(GgufValueType::kInt64, {-(1ll << 62)}));
    w.add_raw("f64s", 9, array_payload<double>(GgufValueType::kFloat64, {0.25, -3.0}));
    w.add_raw("bools", 9, array_payload<uint8_t>(GgufValueType::kBool, {1, 0, 1}));
    w.add_raw("none", 9, array_payload<int32_t>(GgufValueType::kInt32, {}));
    auto f = parse_ok(w.to_bytes());
    ASSERT_TRUE(f);

    EXPECT_EQ(f->get_string_array("strs").value(),
              (std::vector<std::string>{"a", "", "ĠHello", std::string(300, 'x')}));
    EXPECT_EQ(f->find("f32s")->array_type, GgufValueType::kFloat32);
    const auto f32s = f->get_float_array("f32s").value();
    ASSERT_EQ(f32s.size(), 3u);
    EXPECT_EQ(f32s[0], 1.5);
    EXPECT_TRUE(std::signbit(f32s[1]));
    EXPECT_EQ(f32s[2], static_cast<double>(1e-30f));
    EXPECT_EQ(f->get_int_array("i32s").value(), (std::vector<int64_t>{-1, 0, 2147483647}));
    EXPECT_EQ(f->get_int_array("u8s").value(), (std::vector<int64_t>{0, 255}));
    EXPECT_EQ(f->get_int_array("i8s").value(), (std::vector<int64_t>{-128, 127}));
    EXPECT_EQ(f->get_int_array("u16s").value(), (std::vector<int64_t>{65535}));
    EXPECT_EQ(f->get_int_array("i16s").value(), (std::vector<int64_t>{-32768}));
    EXPECT_EQ(f->get_int_array("u32s").value(), (std::vector<int64_t>{4000000000LL, 7}));
    EXPECT_EQ(f->get_int_array("u64s").value(), (std::vector<int64_t>{1LL << 62}));
    EXPECT_EQ(f->get_int_array("i64s").value(), (std::vector<int64_t>{-(1LL << 62)}));
    EXPECT_EQ(f->get_float_array("f64s").value(), (std::vector<double>{0.25, -3.0}));
    EXPECT_EQ(f->get_float_array("u8s").value(), (std::vector<double>{0.0, 255.0}));
    EXPECT_EQ(std::get<std::vector<bool>>(f->find("bools")->value), (std::vector<bool>{true, false, true}));
    EXPECT_TRUE(f->get_int_array("none").value().empty());
}

TEST(GgufRoundTrip, GetterErrors) {
    GgufWriter w;
    w.add_string("s", "x");
    w.add_u32("n", 3);
    w.add_f32_array("fa", {1.0f});
    w.add_raw("big", 9, array_payload<uint64_t>(GgufValueType::kUint64, {1ull << 63}));
    const std::vector<uint8_t> bytes = w.to_bytes();
    // A uint64 array element beyond int64 cannot be represented: rejected at parse time.
    auto bad = GgufFile::parse(bytes.data(), bytes.size());
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(bad.status().message().find("'big'"), std::string::npos) << bad.status().message();

    GgufWriter w2;
    w2.add_string("s", "x");
    w2.add_u32("n", 3);
    w2.add_f32_array("fa", {1.0f});
    auto f = parse_ok(w2.to_bytes());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->get_string("missing").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(f->get_int("s").status().code(), StatusCode::kCorrupt);
    EXPECT_NE(f->get_int("s").status().message().find("string"), std::string::npos);
    EXPECT_EQ(f->get_string("n").status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(f->get_bool("n").status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(f->get_float("s").status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(f->get_int_array("fa").status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(f->get_string_array("fa").status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(f->get_float_array("n").status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(f->find("nope"), nullptr);
    EXPECT_EQ(f->find_tensor("nope"), nullptr);
}

TEST(GgufRoundTrip, TensorsOfSeveralTypesAndRanks) {
    GgufWriter w;
    std::vector<float> values(4 * 64);
    for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(static_cast<float>(i));
    w.add_string("general.architecture", "test");
    w.add_tensor_f32("a.f32", {3}, {1.0f, 2.0f, 3.0f});
    w.add_tensor("b.q8", {64, 4}, GgmlType::kQ8_0, quantize(GgmlType::kQ8_0, values.data(), 256).value());
    w.add_tensor("c.q41", {32, 2, 2, 2}, GgmlType::kQ4_1, quantize(GgmlType::kQ4_1, values.data(), 256).value());
    w.add_tensor("d.f16", {5, 1, 3}, GgmlType::kF16, quantize(GgmlType::kF16, values.data(), 15).value());
    const std::vector<uint8_t> bytes = w.to_bytes();
    EXPECT_EQ(bytes.size() % 32, 0u);
    auto f = parse_ok(bytes);
    ASSERT_TRUE(f);
    ASSERT_EQ(f->tensors().size(), 4u);
    EXPECT_EQ(f->alignment(), 32u);

    const GgufTensorInfo* a = f->find_tensor("a.f32");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->dims, (std::vector<int64_t>{3}));
    EXPECT_EQ(a->type, GgmlType::kF32);
    EXPECT_EQ(a->num_elements, 3);
    EXPECT_EQ(a->num_bytes, 12u);
    EXPECT_EQ(a->offset, 0u);
    float got[3];
    std::memcpy(got, f->tensor_data(*a), sizeof got);
    EXPECT_EQ(got[2], 3.0f);

    const GgufTensorInfo* b = f->find_tensor("b.q8");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->num_elements, 256);
    EXPECT_EQ(b->num_bytes, 8u * 34u);
    EXPECT_EQ(b->offset, 32u);  // the 12 bytes of a.f32 padded to 32
    const auto q8 = quantize(GgmlType::kQ8_0, values.data(), 256).value();
    EXPECT_EQ(std::memcmp(f->tensor_data(*b), q8.data(), q8.size()), 0);

    const GgufTensorInfo* c = f->find_tensor("c.q41");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->dims, (std::vector<int64_t>{32, 2, 2, 2}));
    EXPECT_EQ(c->num_bytes, 8u * 20u);
    const GgufTensorInfo* d = f->find_tensor("d.f16");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->num_bytes, 30u);
    for (const GgufTensorInfo& t : f->tensors()) {
        EXPECT_EQ(t.offset % 32, 0u) << t.name;
        // Data section starts aligned in the file as well.
        EXPECT_EQ(static_cast<size_t>(f->tensor_data(t) - bytes.data()) % 32, 0u) << t.name;
    }
    // Tensor order is file order.
    EXPECT_EQ(f->tensors()[0].name, "a.f32");
    EXPECT_EQ(f->tensors()[3].name, "d.f16");
}

TEST(GgufRoundTrip, CustomAlignment) {
    GgufWriter w;
    w.add_u32("general.alignment", 128);
    w.add_tensor_f32("x", {5}, {1, 2, 3, 4, 5});
    w.add_tensor_f32("y", {2}, {6, 7});
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = parse_ok(bytes);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->alignment(), 128u);
    EXPECT_EQ(f->find_tensor("y")->offset, 128u);
    EXPECT_EQ((f->tensor_data(*f->find_tensor("x")) - bytes.data()) % 128, 0);
    float y[2];
    std::memcpy(y, f->tensor_data(*f->find_tensor("y")), sizeof y);
    EXPECT_EQ(y[1], 7.0f);
}

TEST(GgufRoundTrip, VersionTwoParsesLikeThree) {
    GgufWriter w;
    w.add_string("k", "v");
    w.add_tensor_f32("t", {8}, std::vector<float>(8, 0.5f));
    std::vector<uint8_t> bytes = w.to_bytes();
    test::put_le<uint32_t>(bytes, 4, 2);
    auto f = parse_ok(bytes);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->version(), 2u);
    EXPECT_EQ(f->get_string("k").value(), "v");
}

TEST(GgufRoundTrip, OpenFromDisk) {
    test::ScratchDir dir;
    GgufWriter w;
    w.add_string("general.name", "disk");
    w.add_tensor_f32("t", {4}, {1, 2, 3, 4});
    ASSERT_TRUE(w.write(dir.file("m.gguf")).ok());
    auto f = GgufFile::open(dir.file("m.gguf"));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ((*f)->path(), dir.file("m.gguf"));
    EXPECT_EQ((*f)->get_string("general.name").value(), "disk");
    float t[4];
    std::memcpy(t, (*f)->tensor_data((*f)->tensors()[0]), sizeof t);
    EXPECT_EQ(t[3], 4.0f);

    auto missing = GgufFile::open(dir.file("absent.gguf"));
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
    EXPECT_EQ(w.write(dir.file("no/such/dir/m.gguf")).code(), StatusCode::kIoError);
}

TEST(GgufRoundTrip, NoTensorsNoPaddingNeeded) {
    // A metadata-only file may end right after the last key (no data section at all).
    std::vector<uint8_t> b = {'G', 'G', 'U', 'F'};
    append_le<uint32_t>(b, 3);
    append_le<uint64_t>(b, 0);
    append_le<uint64_t>(b, 1);
    append_gguf_string(b, "k");
    append_le<uint32_t>(b, 4);
    append_le<uint32_t>(b, 9);
    auto f = parse_ok(b);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->get_int("k").value(), 9);
    EXPECT_TRUE(f->tensors().empty());
}

}  // namespace
}  // namespace lazyattn::loader
