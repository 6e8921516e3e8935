// ByteReader: a bounds-checked little-endian cursor over a byte range, the only way the GGUF
// parser touches file bytes. Every read first checks the bytes left, so a length or count taken
// from the file can never move the cursor outside the range; failures are kCorrupt Statuses that
// say what was being read and at which offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/status.h"

namespace lazyattn::loader {

class ByteReader {
public:
    ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

    size_t pos() const { return pos_; }
    size_t size() const { return size_; }
    size_t remaining() const { return size_ - pos_; }

    // Reads a trivially copyable little-endian value (the host is little-endian; see
    // dequantize.cpp).
    template <typename T>
    Status read(T* out, std::string_view what) {
        static_assert(std::is_trivially_copyable_v<T>);
        LA_RETURN_IF_ERROR(require(sizeof(T), what));
        std::memcpy(out, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return {};
    }

    // A GGUF string: u64 byte length, then the bytes (no terminator).
    Status read_string(std::string* out, std::string_view what) {
        const size_t start = pos_;
        uint64_t len = 0;
        LA_RETURN_IF_ERROR(read(&len, what));
        if (len > remaining()) {
            pos_ = start;
            return corrupt(std::string(what) + ": string length " + std::to_string(len) + " at offset " +
                           std::to_string(start) + " exceeds the " + std::to_string(remaining() - 8) +
                           " bytes left after it");
        }
        out->assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len);
        return {};
    }

    Status skip(size_t n, std::string_view what) {
        LA_RETURN_IF_ERROR(require(n, what));
        pos_ += n;
        return {};
    }

private:
    Status require(size_t n, std::string_view what) const {
        if (n <= remaining()) return {};
        return corrupt("truncated file: " + std::string(what) + " at offset " + std::to_string(pos_) + " needs " +
                       std::to_string(n) + " bytes, only " + std::to_string(remaining()) + " left");
    }

    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

}  // namespace lazyattn::loader
