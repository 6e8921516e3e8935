// BackendArray: a growable array in a backend's memory (activations, a step's plan arrays), so
// the model never holds a pointer it could dereference on the host by mistake. Growing does not
// keep the contents: every user writes the array before reading it in the same step.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "core/status.h"

namespace lazyattn::backend {

template <typename T>
class BackendArray {
public:
    // Room for at least n elements. Grows by half again at least, so steps of slowly growing
    // size do not reallocate every time.
    Status reserve(Backend& be, int64_t n) {
        const size_t bytes = sizeof(T) * size_t(std::max<int64_t>(n, 1));
        if (buf_ != nullptr && buf_->bytes() >= bytes) return {};
        const size_t grown = buf_ != nullptr ? std::max(bytes, buf_->bytes() + buf_->bytes() / 2) : bytes;
        buf_.reset();  // freed before the larger one is had
        LA_ASSIGN_OR_RETURN(buf_, be.allocate(grown));
        return {};
    }
    // The n host values, uploaded.
    Status assign(Backend& be, const T* host, int64_t n) {
        LA_RETURN_IF_ERROR(reserve(be, n));
        if (n > 0) be.upload(buf_->data(), host, sizeof(T) * size_t(n));
        return {};
    }
    T* data() const { return buf_ != nullptr ? static_cast<T*>(buf_->data()) : nullptr; }

private:
    std::unique_ptr<Buffer> buf_;
};

}  // namespace lazyattn::backend
