#include "kv/kv_storage.h"

#include <algorithm>
#include <cstring>

namespace lazyattn::kv {

KvStorage::KvStorage(const KvShape& shape) : shape_(shape) {
    for (int32_t l = 0; l < shape.num_layers; ++l) {
        k_.emplace_back(sizeof(float) * shape.floats_per_layer());
        v_.emplace_back(sizeof(float) * shape.floats_per_layer());
    }
}

void KvStorage::store(int32_t layer, const float* k_rows, const float* v_rows, const int32_t* slots,
                      int32_t num_rows) {
    const int32_t d = shape_.head_dim, bs = shape_.block_size, nkv = shape_.num_kv_heads;
    float* kc = k(layer);
    float* vc = v(layer);
    for (int32_t r = 0; r < num_rows; ++r) {
        const int32_t block = slots[r] / bs, offset = slots[r] % bs;
        for (int32_t h = 0; h < nkv; ++h) {
            const int64_t dst = ((int64_t(block) * nkv + h) * bs + offset) * d;
            const int64_t src = (int64_t(r) * nkv + h) * d;
            std::memcpy(kc + dst, k_rows + src, sizeof(float) * d);
            std::memcpy(vc + dst, v_rows + src, sizeof(float) * d);
        }
    }
}

void KvStorage::copy_tokens(const int32_t* src_blocks, const int32_t* dst_blocks, int32_t num_tokens) {
    const int32_t d = shape_.head_dim, bs = shape_.block_size, nkv = shape_.num_kv_heads;
    for (int32_t l = 0; l < shape_.num_layers; ++l) {
        for (int32_t b = 0; b * bs < num_tokens; ++b) {
            const int32_t n = std::min(bs, num_tokens - b * bs);
            for (int32_t h = 0; h < nkv; ++h) {
                const int64_t src = ((int64_t(src_blocks[b]) * nkv + h) * bs) * d;
                const int64_t dst = ((int64_t(dst_blocks[b]) * nkv + h) * bs) * d;
                std::memcpy(k(l) + dst, k(l) + src, sizeof(float) * n * d);
                std::memcpy(v(l) + dst, v(l) + src, sizeof(float) * n * d);
            }
        }
    }
}

}  // namespace lazyattn::kv
