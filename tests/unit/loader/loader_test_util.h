// Helpers shared by the loader tests: byte-level access to GGUF files built by GgufWriter (to
// corrupt one field at a time) and scratch paths.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace lazyattn::loader::test {

template <typename T>
void put_le(std::vector<uint8_t>& bytes, size_t pos, T v) {
    ASSERT_LE(pos + sizeof(T), bytes.size());
    std::memcpy(bytes.data() + pos, &v, sizeof(T));
}

template <typename T>
T get_le(const std::vector<uint8_t>& bytes, size_t pos) {
    T v{};
    if (pos + sizeof(T) > bytes.size()) {
        ADD_FAILURE() << "read of " << sizeof(T) << " bytes at " << pos << " past " << bytes.size();
        return v;
    }
    std::memcpy(&v, bytes.data() + pos, sizeof(T));
    return v;
}

template <typename T>
void append_le(std::vector<uint8_t>& out, T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

inline void append_gguf_string(std::vector<uint8_t>& out, const std::string& s) {
    append_le<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

// Fields of the tensor info whose name is `name` (found as a length-prefixed string; names in
// these tests are unique within the file).
struct TensorInfoPos {
    size_t n_dims = 0;  // u32
    size_t dims = 0;    // u64 x n_dims
    size_t type = 0;    // u32
    size_t offset = 0;  // u64
};

inline TensorInfoPos find_tensor_info(const std::vector<uint8_t>& bytes, const std::string& name) {
    std::vector<uint8_t> needle;
    append_gguf_string(needle, name);
    size_t at = std::string::npos;
    for (size_t i = 0; i + needle.size() <= bytes.size(); ++i) {
        if (std::memcmp(bytes.data() + i, needle.data(), needle.size()) == 0) at = i;  // last match
    }
    TensorInfoPos p;
    if (at == std::string::npos) {
        ADD_FAILURE() << "tensor info '" << name << "' not found";
        return p;
    }
    p.n_dims = at + needle.size();
    const auto n = get_le<uint32_t>(bytes, p.n_dims);
    p.dims = p.n_dims + 4;
    p.type = p.dims + 8 * n;
    p.offset = p.type + 4;
    return p;
}

// A fresh directory under the test temp dir, removed with the object.
class ScratchDir {
public:
    ScratchDir() {
        std::string tmpl = ::testing::TempDir() + "la_loader_XXXXXX";
        path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
        EXPECT_FALSE(path_.empty());
    }
    ~ScratchDir() {
        std::error_code ec;
        if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

}  // namespace lazyattn::loader::test
