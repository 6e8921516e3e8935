// GgufWriter: writes a GGUF v3 file (metadata + tensors, 32-byte alignment). Used to build the
// tiny synthetic models the fast tests run on, and hand-made corrupt files for reader tests.
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
    void add_u32(const std::string& key, uint32_t value);
    void add_i32(const std::string& key, int32_t value);
    void add_f32(const std::string& key, float value);
    void add_bool(const std::string& key, bool value);
    void add_string_array(const std::string& key, const std::vector<std::string>& values);
    void add_f32_array(const std::string& key, const std::vector<float>& values);
    void add_i32_array(const std::string& key, const std::vector<int32_t>& values);
    // dims in ggml order (dims[0] contiguous); `bytes` already encoded in `type`.
    void add_tensor(const std::string& name, const std::vector<int64_t>& dims, GgmlType type,
                    std::vector<uint8_t> bytes);
    void add_tensor_f32(const std::string& name, const std::vector<int64_t>& dims,
                        const std::vector<float>& values);

    std::vector<uint8_t> to_bytes() const;
    Status write(const std::string& path) const;

private:
    struct Tensor {
        std::string name;
        std::vector<int64_t> dims;
        GgmlType type;
        std::vector<uint8_t> bytes;
    };
    std::vector<uint8_t> kv_bytes_;
    uint64_t num_kv_ = 0;
    std::vector<Tensor> tensors_;
};

}  // namespace lazyattn::loader
