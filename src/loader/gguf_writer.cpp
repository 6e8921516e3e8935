// GGUF v3 encoding, the mirror of gguf_file.cpp: header, metadata entries in insertion order,
// tensor infos, padding to the alignment, then each tensor's bytes padded to the alignment.
#include "loader/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "core/check.h"
#include "loader/gguf_file.h"

namespace lazyattn::loader {

namespace {

constexpr uint32_t kVersion = 3;

template <typename T>
void append(std::vector<uint8_t>& out, T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}

void append_string(std::vector<uint8_t>& out, const std::string& s) {
    append<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

uint32_t type_id(GgufValueType t) { return static_cast<uint32_t>(t); }

}  // namespace

template <typename T>
void GgufWriter::put(T value) {
    append(kv_bytes_, value);
}

void GgufWriter::put_string(const std::string& s) { append_string(kv_bytes_, s); }

void GgufWriter::begin_kv(const std::string& key, uint32_t type) {
    put_string(key);
    put<uint32_t>(type);
    ++num_kv_;
}

void GgufWriter::add_string(const std::string& key, const std::string& value) {
    begin_kv(key, type_id(GgufValueType::kString));
    put_string(value);
}

void GgufWriter::add_u8(const std::string& key, uint8_t v) {
    begin_kv(key, type_id(GgufValueType::kUint8));
    put(v);
}
void GgufWriter::add_i8(const std::string& key, int8_t v) {
    begin_kv(key, type_id(GgufValueType::kInt8));
    put(v);
}
void GgufWriter::add_u16(const std::string& key, uint16_t v) {
    begin_kv(key, type_id(GgufValueType::kUint16));
    put(v);
}
void GgufWriter::add_i16(const std::string& key, int16_t v) {
    begin_kv(key, type_id(GgufValueType::kInt16));
    put(v);
}
void GgufWriter::add_i32(const std::string& key, int32_t v) {
    begin_kv(key, type_id(GgufValueType::kInt32));
    put(v);
}
void GgufWriter::add_u64(const std::string& key, uint64_t v) {
    begin_kv(key, type_id(GgufValueType::kUint64));
    put(v);
}
void GgufWriter::add_i64(const std::string& key, int64_t v) {
    begin_kv(key, type_id(GgufValueType::kInt64));
    put(v);
}
void GgufWriter::add_f32(const std::string& key, float v) {
    begin_kv(key, type_id(GgufValueType::kFloat32));
    put(v);
}
void GgufWriter::add_f64(const std::string& key, double v) {
    begin_kv(key, type_id(GgufValueType::kFloat64));
    put(v);
}

void GgufWriter::add_u32(const std::string& key, uint32_t value) {
    begin_kv(key, type_id(GgufValueType::kUint32));
    put(value);
    if (key == "general.alignment" && value != 0 && (value & (value - 1)) == 0) alignment_ = value;
}

void GgufWriter::add_bool(const std::string& key, bool value) {
    begin_kv(key, type_id(GgufValueType::kBool));
    put<uint8_t>(value ? 1 : 0);
}

void GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& values) {
    begin_kv(key, type_id(GgufValueType::kArray));
    put<uint32_t>(type_id(GgufValueType::kString));
    put<uint64_t>(values.size());
    for (const std::string& s : values) put_string(s);
}

void GgufWriter::add_f32_array(const std::string& key, const std::vector<float>& values) {
    begin_kv(key, type_id(GgufValueType::kArray));
    put<uint32_t>(type_id(GgufValueType::kFloat32));
    put<uint64_t>(values.size());
    for (float v : values) put(v);
}

void GgufWriter::add_i32_array(const std::string& key, const std::vector<int32_t>& values) {
    begin_kv(key, type_id(GgufValueType::kArray));
    put<uint32_t>(type_id(GgufValueType::kInt32));
    put<uint64_t>(values.size());
    for (int32_t v : values) put(v);
}

void GgufWriter::add_raw(const std::string& key, uint32_t raw_type, const std::vector<uint8_t>& payload) {
    begin_kv(key, raw_type);
    kv_bytes_.insert(kv_bytes_.end(), payload.begin(), payload.end());
}

void GgufWriter::add_tensor(const std::string& name, const std::vector<int64_t>& dims, GgmlType type,
                            std::vector<uint8_t> bytes) {
    add_tensor_info(name, dims, type, std::move(bytes), false);
}

void GgufWriter::add_tensor_deferred(const std::string& name, const std::vector<int64_t>& dims, GgmlType type) {
    add_tensor_info(name, dims, type, {}, true);
}

void GgufWriter::add_tensor_info(const std::string& name, const std::vector<int64_t>& dims, GgmlType type,
                                 std::vector<uint8_t> bytes, bool deferred) {
    LA_CHECK_MSG(!dims.empty() && dims.size() <= 4, "tensor '%s': %zu dims", name.c_str(), dims.size());
    int64_t n = 1;
    for (int64_t d : dims) {
        LA_CHECK_MSG(d > 0, "tensor '%s': dimension %lld", name.c_str(), static_cast<long long>(d));
        n *= d;
    }
    LA_CHECK_MSG(dims[0] % ggml_type_traits(type).block_size == 0, "tensor '%s': row not whole blocks", name.c_str());
    const size_t size = ggml_row_size(type, n);
    LA_CHECK_MSG(deferred || bytes.size() == size, "tensor '%s': %zu bytes, expected %zu", name.c_str(), bytes.size(),
                 size);
    tensors_.push_back({name, dims, type, std::move(bytes), size});
}

void GgufWriter::add_tensor_f32(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    add_tensor(name, dims, GgmlType::kF32, std::move(bytes));
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
    std::vector<uint8_t> out;
    out.insert(out.end(), {'G', 'G', 'U', 'F'});
    append<uint32_t>(out, kVersion);
    append<uint64_t>(out, tensors_.size());
    append<uint64_t>(out, num_kv_);
    out.insert(out.end(), kv_bytes_.begin(), kv_bytes_.end());
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        append_string(out, t.name);
        append<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
        for (int64_t d : t.dims) append<uint64_t>(out, static_cast<uint64_t>(d));
        append<uint32_t>(out, static_cast<uint32_t>(t.type));
        append<uint64_t>(out, offset);
        offset += align_up(t.size, alignment_);
    }
    out.resize(align_up(out.size(), alignment_), 0);
    return out;
}

uint64_t GgufWriter::data_offset(size_t i) const {
    LA_CHECK(i < tensors_.size());
    uint64_t offset = 0;
    for (size_t j = 0; j < i; ++j) offset += align_up(tensors_[j].size, alignment_);
    return offset;
}

uint64_t GgufWriter::data_bytes() const {
    uint64_t total = 0;
    for (const Tensor& t : tensors_) total += align_up(t.size, alignment_);
    return total;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    std::vector<uint8_t> out = header_bytes();
    for (const Tensor& t : tensors_) {
        if (t.bytes.empty()) {
            out.resize(out.size() + t.size, 0);  // deferred: the caller fills it in
        } else {
            out.insert(out.end(), t.bytes.begin(), t.bytes.end());
        }
        out.resize(align_up(out.size(), alignment_), 0);
    }
    return out;
}

Status GgufWriter::write(const std::string& path) const {
    const std::vector<uint8_t> bytes = to_bytes();
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) return io_error("cannot create '" + tmp + "': " + std::strerror(errno));
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    const bool closed = std::fclose(f) == 0;
    if (!written || !closed) {
        std::remove(tmp.c_str());
        return io_error("cannot write '" + tmp + "'");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        return io_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
    }
    return {};
}

}  // namespace lazyattn::loader
