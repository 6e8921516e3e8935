// GgufFile: a GGUF v2/v3 file read in place (mmap): header, metadata key/values, tensor table,
// alignment. Every length, count, offset and type read from the file is checked before use, so a
// truncated, corrupt or unsupported file gives one Status naming what is wrong, never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "loader/ggml_type.h"

namespace lazyattn::loader {

// GGUF metadata value types, numbered as in the specification.
enum class GgufValueType : uint32_t {
    kUint8 = 0,
    kInt8 = 1,
    kUint16 = 2,
    kInt16 = 3,
    kUint32 = 4,
    kInt32 = 5,
    kFloat32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kUint64 = 10,
    kInt64 = 11,
    kFloat64 = 12,
};

// "uint32", "string", ...; "unknown" for a number outside the specification.
const char* gguf_value_type_name(GgufValueType type);

// One metadata value. Scalars are widened (all integers to int64/uint64, floats to double);
// arrays keep their element type. Large arrays (the vocabulary) are stored as vectors.
struct GgufValue {
    GgufValueType type = GgufValueType::kUint8;
    GgufValueType array_type = GgufValueType::kUint8;  // element type when type == kArray
    std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
                 std::vector<std::string>, std::vector<bool>>
        value;
};

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous (fastest) dimension
    GgmlType type = GgmlType::kF32;
    uint64_t offset = 0;  // from the start of the data section
    uint64_t num_bytes = 0;
    int64_t num_elements = 0;
};

class GgufFile {
public:
    // Maps and parses a file.
    static Expected<std::unique_ptr<GgufFile>> open(const std::string& path);
    // Parses bytes owned by the caller (kept alive by the caller): used by the fuzzer and tests.
    static Expected<std::unique_ptr<GgufFile>> parse(const uint8_t* data, size_t size);

    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    const std::string& path() const { return mapped_.path(); }

    const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
    const GgufValue* find(std::string_view key) const;

    // Typed getters: kNotFound if absent, kCorrupt if present with the wrong type.
    Expected<std::string> get_string(std::string_view key) const;
    Expected<int64_t> get_int(std::string_view key) const;   // any integer type
    Expected<double> get_float(std::string_view key) const;  // float or integer types
    Expected<bool> get_bool(std::string_view key) const;
    Expected<std::vector<std::string>> get_string_array(std::string_view key) const;
    Expected<std::vector<int64_t>> get_int_array(std::string_view key) const;
    Expected<std::vector<double>> get_float_array(std::string_view key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(std::string_view name) const;
    // Pointer to a tensor's bytes inside the file (bounds were checked at parse time).
    const uint8_t* tensor_data(const GgufTensorInfo& info) const { return data_section_ + info.offset; }
    // See MappedFile::drop_resident (a no-op for parsed caller bytes).
    void drop_resident(const void* p, size_t bytes) const { mapped_.drop_resident(p, bytes); }

private:
    Status parse_all(const uint8_t* data, size_t size);

    MappedFile mapped_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    std::map<std::string, GgufValue, std::less<>> metadata_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
    const uint8_t* data_section_ = nullptr;
};

}  // namespace lazyattn::loader
