#include "core/large_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace lazyattn {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}

LargeBuffer::LargeBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    const size_t align = bytes >= kHugePage ? kHugePage : 64;
    const size_t rounded = (bytes + align - 1) / align * align;
    data_ = static_cast<uint8_t*>(std::aligned_alloc(align, rounded));
    if (data_ == nullptr) throw std::bad_alloc();
    // Advice only: without transparent huge pages this changes nothing.
    if (align == kHugePage) (void)madvise(data_, rounded, MADV_HUGEPAGE);
    std::memset(data_, 0, rounded);
}

LargeBuffer::~LargeBuffer() { std::free(data_); }

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& other) noexcept {
    if (this != &other) {
        std::free(data_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

}  // namespace lazyattn
