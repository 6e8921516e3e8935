// LargeBuffer: zeroed, 64-byte-aligned memory for the big arrays that kernels stream (the KV pool,
// repacked weights). Blocks of 2 MiB and more are mapped from the kernel, aligned to 2 MiB and
// advised as huge-page candidates: attention and decode matmuls jump between 4 KiB-sized pieces
// of such arrays, and with 4 KiB pages nearly every piece costs a TLB miss. All memory is committed
// at construction, so no later request pays for page faults.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyattn {

class LargeBuffer {
public:
    LargeBuffer() = default;
    // Throws std::bad_alloc when the memory cannot be had. prefault = false leaves the pages of a
    // mapped block to be faulted in when first written (for memory filled once, at load, and
    // possibly not to its end: untouched pages stay out of resident memory).
    explicit LargeBuffer(size_t bytes, bool prefault = true);
    ~LargeBuffer();
    LargeBuffer(LargeBuffer&& other) noexcept : data_(other.data_), size_(other.size_), mapped_(other.mapped_) {
        other.data_ = nullptr;
        other.size_ = other.mapped_ = 0;
    }
    LargeBuffer& operator=(LargeBuffer&& other) noexcept;
    LargeBuffer(const LargeBuffer&) = delete;
    LargeBuffer& operator=(const LargeBuffer&) = delete;

    uint8_t* data() { return data_; }
    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }

private:
    void release();
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
    size_t mapped_ = 0;  // bytes mapped at data_ (0: heap memory)
};

}  // namespace lazyattn
