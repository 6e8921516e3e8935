#include "kv/kv_storage.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

namespace lazyattn::kv {
namespace {

std::string mib(int64_t bytes) { return std::to_string((bytes + (int64_t(1) << 20) - 1) >> 20) + " MiB"; }

int64_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? int64_t(pages) * page : INT64_MAX;
}

}  // namespace

Expected<KvStorage> KvStorage::allocate(const KvShape& shape) {
    const int64_t bytes = shape.bytes_per_block() * shape.num_blocks;
    const std::string what = "the KV pool of " + std::to_string(shape.num_blocks) + " blocks needs " + mib(bytes);
    if (bytes > physical_memory_bytes()) {
        return resource_exhausted(what + " but this machine has " + mib(physical_memory_bytes()) +
                                  " of memory (lower --kv-cache-mb)");
    }
    try {
        return KvStorage(shape);
    } catch (const std::bad_alloc&) {
        return resource_exhausted(what + ", which could not be allocated (lower --kv-cache-mb)");
    }
}

KvStorage::KvStorage(const KvShape& shape) : shape_(shape) {
    for (int32_t l = 0; l < shape.num_layers; ++l) {
        k_.emplace_back(size_t(shape.elements_per_layer() * element_bytes()));
        v_.emplace_back(size_t(shape.elements_per_layer() * element_bytes()));
    }
}

void KvStorage::store(int32_t layer, const float* k_rows, const float* v_rows, const int32_t* slots, int32_t num_rows) {
    const int32_t d = shape_.head_dim, bs = shape_.block_size, nkv = shape_.num_kv_heads;
    const int64_t eb = element_bytes();
    uint8_t* kc = k_[layer].data();
    uint8_t* vc = v_[layer].data();
    for (int32_t r = 0; r < num_rows; ++r) {
        const int32_t block = slots[r] / bs, offset = slots[r] % bs;
        for (int32_t h = 0; h < nkv; ++h) {
            const int64_t dst = ((int64_t(block) * nkv + h) * bs + offset) * d * eb;
            const int64_t src = (int64_t(r) * nkv + h) * d;
            kernels::f32_to_kv(k_rows + src, shape_.dtype, kc + dst, d);
            kernels::f32_to_kv(v_rows + src, shape_.dtype, vc + dst, d);
        }
    }
}

void KvStorage::copy_tokens(const int32_t* src_blocks, const int32_t* dst_blocks, int32_t num_tokens) {
    const int32_t d = shape_.head_dim, bs = shape_.block_size, nkv = shape_.num_kv_heads;
    const int64_t eb = element_bytes();
    for (int32_t l = 0; l < shape_.num_layers; ++l) {
        for (int32_t b = 0; b * bs < num_tokens; ++b) {
            const int32_t n = std::min(bs, num_tokens - b * bs);
            for (int32_t h = 0; h < nkv; ++h) {
                const int64_t src = ((int64_t(src_blocks[b]) * nkv + h) * bs) * d * eb;
                const int64_t dst = ((int64_t(dst_blocks[b]) * nkv + h) * bs) * d * eb;
                std::memcpy(k_[l].data() + dst, k_[l].data() + src, size_t(n) * d * eb);
                std::memcpy(v_[l].data() + dst, v_[l].data() + src, size_t(n) * d * eb);
            }
        }
    }
}

void KvStorage::read_block_keys(int32_t layer, int32_t block, float* out) const {
    const int64_t n = shape_.elements_per_block();
    kernels::kv_to_f32(k_[layer].data() + int64_t(block) * n * element_bytes(), shape_.dtype, out, n);
}

void KvStorage::write_block_keys(int32_t layer, int32_t block, const float* in) {
    const int64_t n = shape_.elements_per_block();
    kernels::f32_to_kv(in, shape_.dtype, k_[layer].data() + int64_t(block) * n * element_bytes(), n);
}

}  // namespace lazyattn::kv
