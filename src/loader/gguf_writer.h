// GgufWriter: writes a GGUF v3 file (metadata + tensors, 32-byte alignment unless a valid
// general.alignment is added). Used to build the tiny synthetic models the fast tests run on,
// and hand-made corrupt files for reader tests: it writes what it is given, duplicate keys and
// invalid alignment values included, so tests can produce files the reader must reject.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "loader/ggml_type.h"

namespace lazyattn::loader {

class GgufWriter {
public:
    void add_string(const std::string& key, const std::string& value);
    void add_u8(const std::string& key, uint8_t value);
    void add_i8(const std::string& key, int8_t value);
    void add_u16(const std::string& key, uint16_t value);
    void add_i16(const std::string& key, int16_t value);
    // add_u32("general.alignment", a) with a a power of two also sets the data alignment.
    void add_u32(const std::string& key, uint32_t value);
    void add_i32(const std::string& key, int32_t value);
    void add_u64(const std::string& key, uint64_t value);
    void add_i64(const std::string& key, int64_t value);
    void add_f32(const std::string& key, float value);
    void add_f64(const std::string& key, double value);
    void add_bool(const std::string& key, bool value);
    void add_string_array(const std::string& key, const std::vector<std::string>& values);
    void add_f32_array(const std::string& key, const std::vector<float>& values);
    void add_i32_array(const std::string& key, const std::vector<int32_t>& values);
    // A value already encoded: `raw_type` (a GgufValueType number, or any number) followed by
    // `payload` verbatim. For arrays the payload starts with the element type and the count.
    void add_raw(const std::string& key, uint32_t raw_type, const std::vector<uint8_t>& payload);
    // dims in ggml order (dims[0] contiguous); `bytes` already encoded in `type` and exactly
    // ggml_row_size(type, product of dims) long (checked).
    void add_tensor(const std::string& name, const std::vector<int64_t>& dims, GgmlType type,
                    std::vector<uint8_t> bytes);
    void add_tensor_f32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values);
    // A tensor whose bytes the caller writes later, straight into the file image (models too
    // large to hold twice): to_bytes() writes zeros for it; header_bytes() and data_offset() say
    // where its bytes go.
    void add_tensor_deferred(const std::string& name, const std::vector<int64_t>& dims, GgmlType type);

    // Everything before the data section (header, metadata, tensor infos, padding).
    std::vector<uint8_t> header_bytes() const;
    // Offset of tensor i's bytes from the start of the data section (tensors in insertion order).
    uint64_t data_offset(size_t i) const;
    // Size of the data section (every tensor padded to the alignment).
    uint64_t data_bytes() const;

    uint64_t alignment() const { return alignment_; }
    std::vector<uint8_t> to_bytes() const;
    // Writes to `path` + ".tmp" then renames, so a reader never sees a half-written file.
    Status write(const std::string& path) const;

private:
    struct Tensor {
        std::string name;
        std::vector<int64_t> dims;
        GgmlType type;
        std::vector<uint8_t> bytes;  // empty for a deferred tensor
        uint64_t size = 0;           // bytes of the tensor's data
    };
    void add_tensor_info(const std::string& name, const std::vector<int64_t>& dims, GgmlType type,
                         std::vector<uint8_t> bytes, bool deferred);
    void begin_kv(const std::string& key, uint32_t type);
    template <typename T>
    void put(T value);
    void put_string(const std::string& s);

    std::vector<uint8_t> kv_bytes_;
    uint64_t num_kv_ = 0;
    uint64_t alignment_ = 32;
    std::vector<Tensor> tensors_;
};

}  // namespace lazyattn::loader
