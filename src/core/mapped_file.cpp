#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lazyattn {

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
    other.data_ = nullptr;
    other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        release();
        data_ = other.data_;
        size_ = other.size_;
        path_ = std::move(other.path_);
        other.data_ = nullptr;
        other.size_ = 0;
    }
    return *this;
}

void MappedFile::release() {
    if (data_ != nullptr && size_ > 0) munmap(const_cast<uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
}

void MappedFile::drop_resident(const void* p, size_t bytes) const {
    const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + bytes;
    const auto lo = reinterpret_cast<uintptr_t>(data_), hi = lo + size_;
    if (data_ == nullptr || begin < lo || end > hi) return;
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t a = (begin + page - 1) / page * page, b = end / page * page;
    // A private read-only file mapping: dropped pages read the same bytes from the file again.
    if (a < b) (void)madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

Expected<MappedFile> MappedFile::open(const std::string& path) {
    // O_NONBLOCK: opening a FIFO (or a device) for reading would otherwise wait for a writer
    // forever; it opens at once and the type check below refuses it.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return io_error("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return io_error("'" + path + "' is not a regular file");
    }
    MappedFile f;
    f.path_ = path;
    f.size_ = static_cast<size_t>(st.st_size);
    if (f.size_ > 0) {
        void* p = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            f.size_ = 0;
            return io_error("cannot mmap '" + path + "': " + std::strerror(errno));
        }
        f.data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    return f;
}

}  // namespace lazyattn
