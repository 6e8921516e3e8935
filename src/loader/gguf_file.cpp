// GGUF v2/v3 parser. Layout (all little-endian):
//   "GGUF" | u32 version | u64 tensor_count | u64 kv_count
//   kv_count x  { string key | u32 value_type | value }
//   tensor_count x { string name | u32 n_dims | u64 dims[n_dims] | u32 ggml_type | u64 offset }
//   padding to general.alignment (default 32) | data section (tensor offsets are relative to it)
// A string is u64 length + bytes; an array is u32 element type + u64 count + elements.
//
// Trust nothing: every count is checked against the bytes left before anything is allocated for
// it (each item has a known minimum encoded size), dims products and byte sizes use overflow-
// checked arithmetic, and every tensor's data range is checked to lie inside the file and not
// to overlap another's. Errors name the key or tensor and the offsets involved.
#include "loader/gguf_file.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <type_traits>

#include "loader/byte_reader.h"

namespace lazyattn::loader {

namespace {

constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint64_t kMaxAlignment = uint64_t{1} << 31;
// Smallest possible encodings: a kv is a key of >= 1 byte (8 + 1), a type (4) and a value of
// >= 1 byte; a tensor info is a name (8 + 1), n_dims (4), >= 1 dim (8), a type (4), an offset (8).
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// Encoded size of one scalar of `type`; 8 (the length field) for strings; 0 for arrays/unknown.
uint64_t min_encoded_size(GgufValueType type) {
    switch (type) {
        case GgufValueType::kUint8:
        case GgufValueType::kInt8:
        case GgufValueType::kBool:
            return 1;
        case GgufValueType::kUint16:
        case GgufValueType::kInt16:
            return 2;
        case GgufValueType::kUint32:
        case GgufValueType::kInt32:
        case GgufValueType::kFloat32:
            return 4;
        case GgufValueType::kUint64:
        case GgufValueType::kInt64:
        case GgufValueType::kFloat64:
        case GgufValueType::kString:
            return 8;
        case GgufValueType::kArray:
            return 0;
    }
    return 0;
}

bool is_known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kFloat64); }

bool is_integer(GgufValueType t) {
    switch (t) {
        case GgufValueType::kUint8:
        case GgufValueType::kInt8:
        case GgufValueType::kUint16:
        case GgufValueType::kInt16:
        case GgufValueType::kUint32:
        case GgufValueType::kInt32:
        case GgufValueType::kUint64:
        case GgufValueType::kInt64:
            return true;
        default:
            return false;
    }
}

bool is_float(GgufValueType t) { return t == GgufValueType::kFloat32 || t == GgufValueType::kFloat64; }

struct Scalar {
    std::variant<uint64_t, int64_t, double, bool, std::string> v;
};

// One fixed-size scalar, widened: unsigned -> uint64_t, signed -> int64_t, floats -> double.
template <typename Narrow>
Status read_widened(ByteReader& r, const std::string& what, Scalar* out) {
    Narrow v{};
    LA_RETURN_IF_ERROR(r.read(&v, what));
    if constexpr (std::is_floating_point_v<Narrow>) {
        out->v = static_cast<double>(v);
    } else if constexpr (std::is_signed_v<Narrow>) {
        out->v = static_cast<int64_t>(v);
    } else {
        out->v = static_cast<uint64_t>(v);
    }
    return {};
}

Status read_bool(ByteReader& r, const std::string& what, Scalar* out) {
    const size_t at = r.pos();
    uint8_t b = 0;
    LA_RETURN_IF_ERROR(r.read(&b, what));
    if (b > 1) {
        return corrupt(what + ": bool byte at offset " + std::to_string(at) + " is " + std::to_string(b) +
                       ", expected 0 or 1");
    }
    out->v = b == 1;
    return {};
}

Status read_scalar(ByteReader& r, GgufValueType type, const std::string& what, Scalar* out) {
    switch (type) {
        case GgufValueType::kUint8:
            return read_widened<uint8_t>(r, what, out);
        case GgufValueType::kInt8:
            return read_widened<int8_t>(r, what, out);
        case GgufValueType::kUint16:
            return read_widened<uint16_t>(r, what, out);
        case GgufValueType::kInt16:
            return read_widened<int16_t>(r, what, out);
        case GgufValueType::kUint32:
            return read_widened<uint32_t>(r, what, out);
        case GgufValueType::kInt32:
            return read_widened<int32_t>(r, what, out);
        case GgufValueType::kUint64:
            return read_widened<uint64_t>(r, what, out);
        case GgufValueType::kInt64:
            return read_widened<int64_t>(r, what, out);
        case GgufValueType::kFloat32:
            return read_widened<float>(r, what, out);
        case GgufValueType::kFloat64:
            return read_widened<double>(r, what, out);
        case GgufValueType::kBool:
            return read_bool(r, what, out);
        case GgufValueType::kString: {
            std::string s;
            LA_RETURN_IF_ERROR(r.read_string(&s, what));
            out->v = std::move(s);
            return {};
        }
        case GgufValueType::kArray:
            break;
    }
    return internal_error(what + ": read_scalar of a non-scalar type");
}

// Fills the vector alternative of `value` matching `elem`, with `count` elements.
Status read_array_elements(ByteReader& r, GgufValueType elem, uint64_t count, const std::string& what,
                           GgufValue* value) {
    const auto n = static_cast<size_t>(count);
    Scalar s;
    if (elem == GgufValueType::kString) {
        std::vector<std::string> out;
        out.reserve(n);
        for (size_t k = 0; k < n; ++k) {
            LA_RETURN_IF_ERROR(read_scalar(r, elem, what, &s));
            out.push_back(std::move(std::get<std::string>(s.v)));
        }
        value->value = std::move(out);
    } else if (elem == GgufValueType::kBool) {
        std::vector<bool> out(n);
        for (size_t k = 0; k < n; ++k) {
            LA_RETURN_IF_ERROR(read_scalar(r, elem, what, &s));
            out[k] = std::get<bool>(s.v);
        }
        value->value = std::move(out);
    } else if (is_float(elem)) {
        std::vector<double> out(n);
        for (size_t k = 0; k < n; ++k) {
            LA_RETURN_IF_ERROR(read_scalar(r, elem, what, &s));
            out[k] = std::get<double>(s.v);
        }
        value->value = std::move(out);
    } else {
        std::vector<int64_t> out(n);
        for (size_t k = 0; k < n; ++k) {
            LA_RETURN_IF_ERROR(read_scalar(r, elem, what, &s));
            if (const auto* u = std::get_if<uint64_t>(&s.v)) {
                if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                    return unsupported(what + ": uint64 element " + std::to_string(k) + " (" + std::to_string(*u) +
                                       ") does not fit in int64");
                }
                out[k] = static_cast<int64_t>(*u);
            } else {
                out[k] = std::get<int64_t>(s.v);
            }
        }
        value->value = std::move(out);
    }
    return {};
}

Status read_array(ByteReader& r, const std::string& what, GgufValue* value) {
    uint32_t elem_raw = 0;
    uint64_t count = 0;
    LA_RETURN_IF_ERROR(r.read(&elem_raw, what + " array type"));
    if (!is_known_value_type(elem_raw)) {
        return corrupt(what + ": unknown array element type " + std::to_string(elem_raw));
    }
    const auto elem = static_cast<GgufValueType>(elem_raw);
    if (elem == GgufValueType::kArray) return unsupported(what + ": nested arrays are not supported");
    const size_t count_at = r.pos();
    LA_RETURN_IF_ERROR(r.read(&count, what + " array length"));
    if (count > r.remaining() / min_encoded_size(elem)) {
        return corrupt(what + ": array of " + std::to_string(count) + " " + gguf_value_type_name(elem) + " at offset " +
                       std::to_string(count_at) + " cannot fit in the " + std::to_string(r.remaining()) +
                       " bytes left");
    }
    value->type = GgufValueType::kArray;
    value->array_type = elem;
    return read_array_elements(r, elem, count, what, value);
}

Status read_value(ByteReader& r, GgufValueType type, const std::string& what, GgufValue* value) {
    if (type == GgufValueType::kArray) return read_array(r, what, value);
    Scalar s;
    LA_RETURN_IF_ERROR(read_scalar(r, type, what, &s));
    value->type = type;
    std::visit([&](auto&& x) { value->value = std::move(x); }, std::move(s.v));
    return {};
}

using Metadata = std::map<std::string, GgufValue, std::less<>>;

Status read_metadata(ByteReader& r, uint64_t num_kv, Metadata* metadata) {
    for (uint64_t k = 0; k < num_kv; ++k) {
        const std::string where = "metadata entry " + std::to_string(k);
        const size_t key_at = r.pos();
        std::string key;
        LA_RETURN_IF_ERROR(r.read_string(&key, where + " key"));
        if (key.empty()) return corrupt(where + ": empty key at offset " + std::to_string(key_at));
        if (metadata->count(key) != 0) {
            return corrupt("duplicate metadata key " + quoted(key) + " at offset " + std::to_string(key_at));
        }
        const std::string what = "metadata key " + quoted(key);
        uint32_t type_raw = 0;
        LA_RETURN_IF_ERROR(r.read(&type_raw, what + " type"));
        if (!is_known_value_type(type_raw)) {
            return corrupt(what + ": unknown value type " + std::to_string(type_raw));
        }
        GgufValue value;
        LA_RETURN_IF_ERROR(read_value(r, static_cast<GgufValueType>(type_raw), what, &value));
        metadata->emplace(std::move(key), std::move(value));
    }
    return {};
}

Expected<uint64_t> read_alignment(const Metadata& metadata) {
    const auto it = metadata.find("general.alignment");
    if (it == metadata.end()) return kDefaultAlignment;
    const GgufValue& v = it->second;
    if (!is_integer(v.type)) {
        return corrupt(std::string("general.alignment has type ") + gguf_value_type_name(v.type) + ", expected uint32");
    }
    const auto* u = std::get_if<uint64_t>(&v.value);
    const auto* i = std::get_if<int64_t>(&v.value);
    const uint64_t a = u ? *u : (*i > 0 ? static_cast<uint64_t>(*i) : 0);
    if (a == 0 || (a & (a - 1)) != 0 || a > kMaxAlignment) {
        return corrupt("general.alignment " + (u ? std::to_string(*u) : std::to_string(*i)) +
                       " is not a power of two between 1 and 2^31");
    }
    return a;
}

// Element count and byte size of a tensor from its dims and type, overflow-checked.
Status compute_tensor_size(GgufTensorInfo* t) {
    const std::string what = "tensor " + quoted(t->name);
    const GgmlTypeTraits traits = ggml_type_traits(t->type);
    int64_t n = 1;
    for (size_t d = 0; d < t->dims.size(); ++d) {
        if (__builtin_mul_overflow(n, t->dims[d], &n)) {
            return corrupt(what + ": element count overflows int64 at dimension " + std::to_string(d));
        }
    }
    if (t->dims[0] % traits.block_size != 0) {
        return corrupt(what + ": row length " + std::to_string(t->dims[0]) + " is not a multiple of the " +
                       traits.name + " block size " + std::to_string(traits.block_size));
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(n / traits.block_size), static_cast<uint64_t>(traits.type_size),
                               &bytes)) {
        return corrupt(what + ": byte size overflows");
    }
    t->num_elements = n;
    t->num_bytes = bytes;
    return {};
}

Status read_tensor_info(ByteReader& r, uint64_t index, uint64_t alignment, GgufTensorInfo* t) {
    LA_RETURN_IF_ERROR(r.read_string(&t->name, "tensor info " + std::to_string(index) + " name"));
    if (t->name.empty()) return corrupt("tensor info " + std::to_string(index) + ": empty name");
    const std::string what = "tensor " + quoted(t->name);
    uint32_t num_dims = 0;
    LA_RETURN_IF_ERROR(r.read(&num_dims, what + " n_dims"));
    if (num_dims == 0 || num_dims > kMaxDims) {
        return corrupt(what + ": n_dims " + std::to_string(num_dims) + " is not in [1, 4]");
    }
    t->dims.resize(num_dims);
    for (uint32_t d = 0; d < num_dims; ++d) {
        uint64_t dim = 0;
        LA_RETURN_IF_ERROR(r.read(&dim, what + " dims"));
        if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return corrupt(what + ": dimension " + std::to_string(d) + " is " + std::to_string(dim));
        }
        t->dims[d] = static_cast<int64_t>(dim);
    }
    uint32_t type_raw = 0;
    LA_RETURN_IF_ERROR(r.read(&type_raw, what + " type"));
    if (ggml_type_traits(type_raw).block_size == 0) {
        return unsupported(what + " has unknown ggml type " + std::to_string(type_raw));
    }
    t->type = static_cast<GgmlType>(type_raw);
    LA_RETURN_IF_ERROR(r.read(&t->offset, what + " offset"));
    if (t->offset % alignment != 0) {
        return corrupt(what + ": data offset " + std::to_string(t->offset) + " is not a multiple of the alignment " +
                       std::to_string(alignment));
    }
    return compute_tensor_size(t);
}

// Every tensor's bytes lie inside the file and no two tensors share a byte.
Status check_tensor_layout(const std::vector<GgufTensorInfo>& tensors, uint64_t data_start, uint64_t file_size) {
    for (const GgufTensorInfo& t : tensors) {
        uint64_t begin = 0, end = 0;
        if (__builtin_add_overflow(data_start, t.offset, &begin) || __builtin_add_overflow(begin, t.num_bytes, &end)) {
            return corrupt("tensor " + quoted(t.name) + ": data offset " + std::to_string(t.offset) + " + " +
                           std::to_string(t.num_bytes) + " bytes overflows");
        }
        if (end > file_size) {
            return corrupt("tensor " + quoted(t.name) + ": data [" + std::to_string(begin) + ", " +
                           std::to_string(end) + ") extends past end of file (size " + std::to_string(file_size) + ")");
        }
    }
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const GgufTensorInfo& prev = tensors[order[k - 1]];
        const GgufTensorInfo& cur = tensors[order[k]];
        if (cur.offset < prev.offset + prev.num_bytes) {
            return corrupt("tensor " + quoted(cur.name) + ": data [" + std::to_string(cur.offset) + ", " +
                           std::to_string(cur.offset + cur.num_bytes) + ") overlaps tensor " + quoted(prev.name) +
                           " data [" + std::to_string(prev.offset) + ", " +
                           std::to_string(prev.offset + prev.num_bytes) + ")");
        }
    }
    return {};
}

Status read_header(ByteReader& r, uint32_t* version, uint64_t* num_tensors, uint64_t* num_kv) {
    char magic[4] = {};
    if (r.size() < 4) return corrupt("not a GGUF file: " + std::to_string(r.size()) + " bytes");
    LA_RETURN_IF_ERROR(r.read(&magic, "magic"));
    if (std::memcmp(magic, "GGUF", 4) != 0) {
        std::string shown;
        for (char c : magic) shown += (c >= 32 && c < 127) ? c : '?';
        return corrupt("not a GGUF file: magic is '" + shown + "', expected 'GGUF'");
    }
    LA_RETURN_IF_ERROR(r.read(version, "version"));
    // A big-endian file spells version n as bytes 00 00 00 n.
    if ((*version & 0x00ffffffu) == 0 && (*version >> 24) >= 1 && (*version >> 24) <= 3) {
        return unsupported("big-endian GGUF (version " + std::to_string(*version >> 24) + ") is not supported");
    }
    if (*version != 2 && *version != 3) {
        return unsupported("GGUF version " + std::to_string(*version) + " is not supported (only versions 2 and 3)");
    }
    LA_RETURN_IF_ERROR(r.read(num_tensors, "tensor count"));
    LA_RETURN_IF_ERROR(r.read(num_kv, "metadata count"));
    if (*num_kv > r.remaining() / kMinKvBytes || *num_tensors > r.remaining() / kMinTensorInfoBytes ||
        *num_kv * kMinKvBytes + *num_tensors * kMinTensorInfoBytes > r.remaining()) {
        return corrupt("header claims " + std::to_string(*num_tensors) + " tensors and " + std::to_string(*num_kv) +
                       " metadata entries, more than the " + std::to_string(r.remaining()) + " bytes left can hold");
    }
    return {};
}

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
    switch (type) {
        case GgufValueType::kUint8:
            return "uint8";
        case GgufValueType::kInt8:
            return "int8";
        case GgufValueType::kUint16:
            return "uint16";
        case GgufValueType::kInt16:
            return "int16";
        case GgufValueType::kUint32:
            return "uint32";
        case GgufValueType::kInt32:
            return "int32";
        case GgufValueType::kFloat32:
            return "float32";
        case GgufValueType::kBool:
            return "bool";
        case GgufValueType::kString:
            return "string";
        case GgufValueType::kArray:
            return "array";
        case GgufValueType::kUint64:
            return "uint64";
        case GgufValueType::kInt64:
            return "int64";
        case GgufValueType::kFloat64:
            return "float64";
    }
    return "unknown";
}

Status GgufFile::parse_all(const uint8_t* data, size_t size) {
    ByteReader r(data, size);
    uint64_t num_tensors = 0, num_kv = 0;
    LA_RETURN_IF_ERROR(read_header(r, &version_, &num_tensors, &num_kv));
    LA_RETURN_IF_ERROR(read_metadata(r, num_kv, &metadata_));
    LA_ASSIGN_OR_RETURN(alignment_, read_alignment(metadata_));

    tensors_.reserve(static_cast<size_t>(num_tensors));
    for (uint64_t k = 0; k < num_tensors; ++k) {
        GgufTensorInfo info;
        LA_RETURN_IF_ERROR(read_tensor_info(r, k, alignment_, &info));
        if (!tensor_index_.emplace(info.name, tensors_.size()).second) {
            return corrupt("duplicate tensor name " + quoted(info.name));
        }
        tensors_.push_back(std::move(info));
    }
    // The data section starts at the next multiple of the alignment (a file without tensors may
    // end before it).
    const uint64_t pos = r.pos();
    const uint64_t data_start = (pos + alignment_ - 1) / alignment_ * alignment_;
    LA_RETURN_IF_ERROR(check_tensor_layout(tensors_, data_start, size));
    data_section_ = data + std::min<uint64_t>(data_start, size);
    return {};
}

Expected<std::unique_ptr<GgufFile>> GgufFile::parse(const uint8_t* data, size_t size) {
    auto file = std::make_unique<GgufFile>();
    LA_RETURN_IF_ERROR(file->parse_all(data, size));
    return file;
}

Expected<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
    LA_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
    auto file = std::make_unique<GgufFile>();
    file->mapped_ = std::move(mapped);
    const Status st = file->parse_all(file->mapped_.data(), file->mapped_.size());
    if (!st.ok()) return Status(st.code(), "'" + path + "': " + st.message());
    return file;
}

const GgufValue* GgufFile::find(std::string_view key) const {
    const auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status missing_key(std::string_view key) { return not_found("metadata key " + quoted(key) + " not found"); }

Status wrong_type(std::string_view key, const GgufValue& v, const char* expected) {
    std::string actual = gguf_value_type_name(v.type);
    if (v.type == GgufValueType::kArray) actual += std::string(" of ") + gguf_value_type_name(v.array_type);
    return corrupt("metadata key " + quoted(key) + " has type " + actual + ", expected " + expected);
}

}  // namespace

Expected<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return missing_key(key);
    if (v->type != GgufValueType::kString) return wrong_type(key, *v, "string");
    return std::get<std::string>(v->value);
}

Expected<int64_t> GgufFile::get_int(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return missing_key(key);
    if (!is_integer(v->type)) return wrong_type(key, *v, "an integer");
    if (const auto* u = std::get_if<uint64_t>(&v->value)) {
        if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return out_of_range("metadata key " + quoted(key) + " value " + std::to_string(*u) +
                                " does not fit in int64");
        }
        return static_cast<int64_t>(*u);
    }
    return std::get<int64_t>(v->value);
}

Expected<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return missing_key(key);
    if (is_float(v->type)) return std::get<double>(v->value);
    if (!is_integer(v->type)) return wrong_type(key, *v, "a number");
    if (const auto* u = std::get_if<uint64_t>(&v->value)) return static_cast<double>(*u);
    return static_cast<double>(std::get<int64_t>(v->value));
}

Expected<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return missing_key(key);
    if (v->type != GgufValueType::kBool) return wrong_type(key, *v, "bool");
    return std::get<bool>(v->value);
}

Expected<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return missing_key(key);
    if (v->type != GgufValueType::kArray || v->array_type != GgufValueType::kString) {
        return wrong_type(key, *v, "array of string");
    }
    return std::get<std::vector<std::string>>(v->value);
}

Expected<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return missing_key(key);
    if (v->type != GgufValueType::kArray || !is_integer(v->array_type)) {
        return wrong_type(key, *v, "array of integers");
    }
    return std::get<std::vector<int64_t>>(v->value);
}

Expected<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return missing_key(key);
    if (v->type == GgufValueType::kArray && is_float(v->array_type)) {
        return std::get<std::vector<double>>(v->value);
    }
    if (v->type == GgufValueType::kArray && is_integer(v->array_type)) {
        const auto& ints = std::get<std::vector<int64_t>>(v->value);
        return std::vector<double>(ints.begin(), ints.end());
    }
    return wrong_type(key, *v, "array of numbers");
}

}  // namespace lazyattn::loader
