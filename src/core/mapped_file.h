// A read-only memory map of a whole file (model weights are read in place, never copied).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace lazyattn {

class MappedFile {
public:
    MappedFile() = default;
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    static Expected<MappedFile> open(const std::string& path);

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }
    // Drops the whole pages inside [p, p + bytes) from this process's resident memory (they are
    // read from the file again if touched later): for bytes a backend has copied into its own
    // layout. A no-op for ranges outside the mapping.
    void drop_resident(const void* p, size_t bytes) const;

private:
    void release();
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    std::string path_;
};

}  // namespace lazyattn
