#include <unistd.h>

#include <cstring>
#include <new>
#include <string>

#include "backend/kv_memory.h"

namespace lazyattn::backend {
namespace {

int64_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? int64_t(pages) * page : INT64_MAX;
}

}  // namespace

Expected<std::unique_ptr<HostKvMemory>> HostKvMemory::allocate(const kv::KvShape& shape) {
    const int64_t bytes = shape.bytes_per_block() * shape.num_blocks;
    const std::string what = kv_pool_needs(shape);
    if (bytes > physical_memory_bytes()) {
        return resource_exhausted(what + " but this machine has " + mib(physical_memory_bytes()) +
                                  " of memory (lower --kv-cache-mb)");
    }
    try {
        return std::make_unique<HostKvMemory>(shape);
    } catch (const std::bad_alloc&) {
        return resource_exhausted(what + ", which could not be allocated (lower --kv-cache-mb)");
    }
}

HostKvMemory::HostKvMemory(const kv::KvShape& shape) : KvMemory(shape) {
    for (int32_t l = 0; l < shape.num_layers; ++l) {
        k_.emplace_back(size_t(shape.elements_per_layer() * element_bytes()));
        v_.emplace_back(size_t(shape.elements_per_layer() * element_bytes()));
    }
}

Status HostKvMemory::read_block(int32_t block, void* host) const {
    const size_t n = size_t(shape_.elements_per_block() * element_bytes());
    auto* out = static_cast<uint8_t*>(host);
    for (int32_t l = 0; l < shape_.num_layers; ++l) {
        std::memcpy(out, k_[l].data() + size_t(block) * n, n);
        std::memcpy(out + n, v_[l].data() + size_t(block) * n, n);
        out += 2 * n;
    }
    return {};
}

Status HostKvMemory::write_block(int32_t block, const void* host) {
    const size_t n = size_t(shape_.elements_per_block() * element_bytes());
    const auto* in = static_cast<const uint8_t*>(host);
    for (int32_t l = 0; l < shape_.num_layers; ++l) {
        std::memcpy(k_[l].data() + size_t(block) * n, in, n);
        std::memcpy(v_[l].data() + size_t(block) * n, in + n, n);
        in += 2 * n;
    }
    return {};
}

}  // namespace lazyattn::backend
