#include "backend/host_kv_ops.h"

#include <algorithm>
#include <cstring>

#include "loader/dequantize.h"
#include "loader/ggml_type.h"

namespace lazyattn::backend {

void host_kv_store(KvMemory& kv, int32_t layer, const float* k_rows, const float* v_rows, const int32_t* slots,
                   int32_t num_rows) {
    const kv::KvShape& s = kv.shape();
    const int32_t d = s.head_dim, bs = s.block_size, nkv = s.num_kv_heads;
    auto* kc = static_cast<uint8_t*>(kv.k(layer));
    auto* vc = static_cast<uint8_t*>(kv.v(layer));
    for (int32_t r = 0; r < num_rows; ++r) {
        const int32_t block = slots[r] / bs, offset = slots[r] % bs;
        for (int32_t h = 0; h < nkv; ++h) {
            const int64_t row = (int64_t(block) * nkv + h) * bs + offset;  // rows quantize on their own
            const int64_t src = (int64_t(r) * nkv + h) * d;
            kernels::f32_to_kv(k_rows + src, s.k_dtype, kc + row * s.k_row_bytes(), d);
            kernels::f32_to_kv(v_rows + src, s.v_dtype, vc + row * s.v_row_bytes(), d);
        }
    }
}

void host_kv_deviation(const KvMemory& kv, int32_t layer, const float* k_rows, const float* v_rows,
                       const int32_t* slots, int32_t num_rows, float* out) {
    const kv::KvShape& s = kv.shape();
    const int32_t d = s.head_dim, bs = s.block_size, nkv = s.num_kv_heads;
    const auto* kc = static_cast<const uint8_t*>(kv.k(layer));
    const auto* vc = static_cast<const uint8_t*>(kv.v(layer));
    std::vector<float> cached(size_t(d) * 2);
    for (int32_t r = 0; r < num_rows; ++r) {
        const int32_t block = slots[r] / bs, offset = slots[r] % bs;
        double sum = 0;
        for (int32_t h = 0; h < nkv; ++h) {
            const int64_t row = (int64_t(block) * nkv + h) * bs + offset;
            const int64_t src = (int64_t(r) * nkv + h) * d;
            kernels::kv_to_f32(kc + row * s.k_row_bytes(), s.k_dtype, cached.data(), d);
            kernels::kv_to_f32(vc + row * s.v_row_bytes(), s.v_dtype, cached.data() + d, d);
            for (int32_t i = 0; i < d; ++i) {
                const double dk = double(k_rows[src + i]) - cached[size_t(i)];
                const double dv = double(v_rows[src + i]) - cached[size_t(d + i)];
                sum += dk * dk + dv * dv;
            }
        }
        out[r] = float(sum);
    }
}

void host_kv_copy_rotate(KvMemory& kv, int32_t layer, const KvCopyRotateParams& p,
                         const std::function<void(const kernels::RopeApplyParams&)>& rotate, HostKvScratch& scratch) {
    const kv::KvShape& s = kv.shape();
    const int32_t d = s.head_dim, bs = s.block_size, nkv = s.num_kv_heads;
    auto* kc = static_cast<uint8_t*>(kv.k(layer));
    auto* vc = static_cast<uint8_t*>(kv.v(layer));
    const int32_t num_blocks = (p.num_tokens + bs - 1) / bs;
    // Row index of head h, token 0 of block b.
    auto at = [&](int32_t b, int32_t h) { return (int64_t(b) * nkv + h) * bs; };
    const int64_t kr = s.k_row_bytes(), vr = s.v_row_bytes();
    if (p.delta == 0) {
        // A plain copy (a cached prompt's rows, KvManager's partial-block reuse): the stored bytes
        // as they are, so the copy equals its source in every KV dtype (a row holds whole
        // quantization groups) with no round trip through f32.
        for (int32_t b = 0; b < num_blocks; ++b) {
            const int32_t n = std::min(bs, p.num_tokens - b * bs);
            for (int32_t h = 0; h < nkv; ++h) {
                std::memcpy(kc + at(p.dst_blocks[b], h) * kr, kc + at(p.src_blocks[b], h) * kr, size_t(n * kr));
                std::memcpy(vc + at(p.dst_blocks[b], h) * vr, vc + at(p.src_blocks[b], h) * vr, size_t(n * vr));
            }
        }
        return;
    }
    // Gather every copied key of the span (block by block, head by head) so one rope call rotates them all.
    const int64_t rows = int64_t(p.num_tokens) * nkv;
    scratch.keys.resize(size_t(rows * d));
    float* keys = scratch.keys.data();
    for (int32_t b = 0; b < num_blocks; ++b) {
        const int32_t n = std::min(bs, p.num_tokens - b * bs);
        for (int32_t h = 0; h < nkv; ++h) {
            kernels::kv_to_f32(kc + at(p.src_blocks[b], h) * kr, s.k_dtype, keys, int64_t(n) * d);
            std::memcpy(vc + at(p.dst_blocks[b], h) * vr, vc + at(p.src_blocks[b], h) * vr, size_t(n * vr));
            keys += int64_t(n) * d;
        }
    }
    if (p.delta != 0 && rows > 0) {
        scratch.positions.assign(size_t(rows), p.delta);
        rotate({scratch.keys.data(), scratch.positions.data(), int32_t(rows), 1, d, p.rope});
    }
    keys = scratch.keys.data();
    for (int32_t b = 0; b < num_blocks; ++b) {
        const int32_t n = std::min(bs, p.num_tokens - b * bs);
        for (int32_t h = 0; h < nkv; ++h) {
            // A quantized key is dequantized, rotated and quantized again: one more rounding than
            // lazy's keys get (docs/benchmarks.md measures it).
            kernels::f32_to_kv(keys, s.k_dtype, kc + at(p.dst_blocks[b], h) * kr, int64_t(n) * d);
            keys += int64_t(n) * d;
        }
    }
}

void host_embedding_lookup(const EmbeddingParams& p) {
    const auto t = static_cast<loader::GgmlType>(p.type);
    const size_t row_bytes =
        p.type == kernels::GgmlType::kF32 ? sizeof(float) * size_t(p.dim) : loader::ggml_row_size(t, p.dim);
    for (int32_t r = 0; r < p.num_rows; ++r) {
        const auto* row = static_cast<const uint8_t*>(p.table) + size_t(p.ids[r]) * row_bytes;
        float* out = p.out + int64_t(r) * p.dim;
        if (p.type == kernels::GgmlType::kF32) {
            std::memcpy(out, row, row_bytes);
        } else {
            const Status st = loader::dequantize_row(t, row, out, p.dim);
            (void)st;  // the type was checked at load
        }
        if (p.scale != 1.0f) {
            for (int64_t i = 0; i < p.dim; ++i) out[i] *= p.scale;
        }
    }
}

}  // namespace lazyattn::backend
