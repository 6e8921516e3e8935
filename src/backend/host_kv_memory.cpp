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
    for (const kernels::KvDtype t : {shape.k_dtype, shape.v_dtype}) {
        if (shape.head_dim % kernels::kv_dtype_group(t) != 0) {
            return invalid_argument(std::string("KV type ") + kernels::kv_dtype_name(t) +
                                    " stores values in groups of " + std::to_string(kernels::kv_dtype_group(t)) +
                                    " along the head dimension; this " + "model's head_dim " +
                                    std::to_string(shape.head_dim) + " is not a multiple");
        }
    }
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
        k_.emplace_back(size_t(shape.num_blocks * shape.k_bytes_per_block()));
        v_.emplace_back(size_t(shape.num_blocks * shape.v_bytes_per_block()));
    }
}

Status HostKvMemory::read_block(int32_t block, void* host) const {
    const size_t nk = size_t(shape_.k_bytes_per_block()), nv = size_t(shape_.v_bytes_per_block());
    auto* out = static_cast<uint8_t*>(host);
    for (int32_t l = 0; l < shape_.num_layers; ++l) {
        std::memcpy(out, k_[l].data() + size_t(block) * nk, nk);
        std::memcpy(out + nk, v_[l].data() + size_t(block) * nv, nv);
        out += nk + nv;
    }
    return {};
}

Status HostKvMemory::write_block(int32_t block, const void* host) {
    const size_t nk = size_t(shape_.k_bytes_per_block()), nv = size_t(shape_.v_bytes_per_block());
    const auto* in = static_cast<const uint8_t*>(host);
    for (int32_t l = 0; l < shape_.num_layers; ++l) {
        std::memcpy(k_[l].data() + size_t(block) * nk, in, nk);
        std::memcpy(v_[l].data() + size_t(block) * nv, in + nk, nv);
        in += nk + nv;
    }
    return {};
}

}  // namespace lazyattn::backend
