#include "backend/cpu/typed_matmul.h"

#include <algorithm>

#include "backend/cpu/simd/quant_dot.h"
#include "backend/cpu/tile_tasks.h"
#include "kernels/ref/kquant_r16_ref.h"
#include "kernels/ref/kquant_ref.h"

namespace lazyattn::backend::cpu {
namespace {

using kernels::GgmlType;
using kernels::ref::ActFormat;

// Bytes of one weight row of n elements.
size_t weight_row_bytes(GgmlType t, int64_t n) {
    switch (t) {
        case GgmlType::kF16:
        case GgmlType::kBF16:
            return size_t(n) * 2;
        case GgmlType::kQ5_0:
            return size_t(n / 32) * 22;
        case GgmlType::kQ5_1:
            return size_t(n / 32) * 24;
        case GgmlType::kQ2_K:
            return size_t(n / 256) * 84;
        case GgmlType::kQ3_K:
            return size_t(n / 256) * 110;
        case GgmlType::kQ4_K:
            return size_t(n / 256) * 144;
        case GgmlType::kQ5_K:
            return size_t(n / 256) * 176;
        case GgmlType::kQ6_K:
            return size_t(n / 256) * 210;
        default:
            return 0;
    }
}

}  // namespace

bool is_typed_weight(GgmlType t) { return weight_row_bytes(t, 256) != 0; }

void typed_matmul(const kernels::MatmulParams& p, ThreadPool& pool, std::vector<uint8_t>& scratch) {
    const auto& k = simd::quant_kernels();
    const simd::TypedDotFn dot = k.typed->get(p.w_type);
    const ActFormat fmt = kernels::ref::activation_format(p.w_type);
    const size_t w_row = weight_row_bytes(p.w_type, p.in_dim);
    const uint8_t* x = reinterpret_cast<const uint8_t*>(p.x);
    size_t x_row = p.in_dim * sizeof(float);
    if (fmt != ActFormat::kF32) {  // fp32 activations are read where they are
        x_row = kernels::ref::activation_row_bytes(p.w_type, p.in_dim);
        scratch.resize(p.num_rows * x_row);
        pool.parallel_for(
            p.num_rows,
            [&](int64_t r) {
                void* dst = scratch.data() + r * x_row;
                const float* src = p.x + r * p.in_dim;
                if (fmt == ActFormat::kQ8_0) {
                    k.quantize_q8_0(src, dst, p.in_dim);
                } else if (fmt == ActFormat::kQ8_1) {
                    k.quantize_q8_1(src, dst, p.in_dim);
                } else if (k.typed->quantize_q8_k != nullptr) {
                    k.typed->quantize_q8_k(src, dst, p.in_dim);
                } else {
                    kernels::ref::quantize_row_q8_K(src, static_cast<kernels::BlockQ8_K*>(dst), p.in_dim);
                }
            },
            8);
        x = scratch.data();
    }
    const auto* w = static_cast<const uint8_t*>(p.w);
    const int threads = pool.num_threads();
    const bool decode = p.num_rows <= simd::kMaxDotRows;
    const simd::TypedTile* tile = k.typed->tile != nullptr && !decode ? k.typed->tile(p.w_type) : nullptr;
    const simd::TypedR16* r16 = p.w_prepared != nullptr && k.typed->r16 != nullptr ? k.typed->r16(p.w_type) : nullptr;
    if (r16 != nullptr) {
        // Repacked at load (prepare_typed_weight): nothing reads the file's bytes any more.
        const auto* rw = static_cast<const uint8_t*>(p.w_prepared);
        const int64_t groups = kernels::ref::kquant_r16_groups(p.out_dim);
        if (decode) {
            // A few chunks of 16-row groups per thread (even load when a core is busy elsewhere).
            const int64_t per_chunk = std::max<int64_t>(1, (groups + 4 * threads - 1) / (4 * threads));
            pool.parallel_for((groups + per_chunk - 1) / per_chunk, [&](int64_t c) {
                const int64_t g0 = c * per_chunk, g1 = std::min(groups, g0 + per_chunk);
                r16->gemv(rw, p.in_dim, g0, g1, p.out_dim, x, x_row, int(p.num_rows), p.y, p.out_dim, p.bias);
            });
            return;
        }
        for_each_tile_task(pool, p.out_dim, p.num_rows, simd::kTypedTileRows, 16, tile->packed_bytes(p.in_dim),
                           [&](uint8_t* packed, int64_t o0, int nw, int64_t r0, int64_t r1) {
                               r16->pack_tile(rw, p.in_dim, o0 / simd::kTypedTileRows, packed);
                               tile->gemm(packed, p.in_dim, x + r0 * x_row, x_row, r1 - r0, p.y + r0 * p.out_dim + o0,
                                          p.out_dim, nw, p.bias != nullptr ? p.bias + o0 : nullptr);
                           });
        return;
    }
    if (tile != nullptr) {
        // Prefill on tiles of kTypedTileRows weight rows, packed per task (tile_tasks.h).
        for_each_tile_task(pool, p.out_dim, p.num_rows, simd::kTypedTileRows, 16, tile->packed_bytes(p.in_dim),
                           [&](uint8_t* packed, int64_t o0, int nw, int64_t r0, int64_t r1) {
                               tile->pack(w + o0 * w_row, w_row, nw, p.in_dim, packed);
                               tile->gemm(packed, p.in_dim, x + r0 * x_row, x_row, r1 - r0, p.y + r0 * p.out_dim + o0,
                                          p.out_dim, nw, p.bias != nullptr ? p.bias + o0 : nullptr);
                           });
        return;
    }
    // Decode: a few slices of weight rows per thread (even load when a core is busy elsewhere).
    // Prefill without tile kernels: 16 weight rows x 64 activation rows per task.
    const int64_t out_tile = decode ? std::max<int64_t>(8, (p.out_dim + 4 * threads - 1) / (4 * threads)) : 16;
    const int64_t row_tile = decode ? p.num_rows : 64;
    const int64_t out_tiles = (p.out_dim + out_tile - 1) / out_tile;
    const int64_t row_tiles = (p.num_rows + row_tile - 1) / row_tile;
    pool.parallel_for(out_tiles * row_tiles, [&](int64_t task) {
        const int64_t o0 = (task % out_tiles) * out_tile, r0 = (task / out_tiles) * row_tile;
        const int64_t o1 = std::min(p.out_dim, o0 + out_tile), r1 = std::min(p.num_rows, r0 + row_tile);
        float out[simd::kMaxDotRows];
        for (int64_t o = o0; o < o1; ++o) {
            const float b = p.bias != nullptr ? p.bias[o] : 0.0f;
            for (int64_t r = r0; r < r1; r += simd::kMaxDotRows) {
                const int rows = int(std::min<int64_t>(simd::kMaxDotRows, r1 - r));
                dot(w + o * w_row, x + r * x_row, x_row, rows, p.in_dim, out);
                for (int i = 0; i < rows; ++i) p.y[(r + i) * p.out_dim + o] = out[i] + b;
            }
        }
    });
}

std::shared_ptr<const void> prepare_typed_weight(const void* w, GgmlType t, int64_t in_dim, int64_t out_dim,
                                                 WeightArena& arena, ThreadPool& pool) {
    const auto& k = simd::quant_kernels();
    if (k.typed->r16 == nullptr || k.typed->r16(t) == nullptr || !kernels::ref::has_kquant_r16(t) ||
        in_dim % kernels::kSuperBlock != 0 || k.typed->tile == nullptr || k.typed->tile(t) == nullptr) {
        return nullptr;
    }
    static_assert(kernels::ref::kR16KRows == simd::kTypedTileRows, "a repacked group is one prefill tile");
    uint8_t* dst = arena.allocate(kernels::ref::kquant_r16_bytes(t, out_dim, in_dim));
    std::shared_ptr<const void> owner(arena.last_buffer(), dst);
    const auto* src = static_cast<const uint8_t*>(w);
    const size_t row_bytes = weight_row_bytes(t, in_dim);
    pool.parallel_for(
        kernels::ref::kquant_r16_groups(out_dim),
        [&](int64_t g) { kernels::ref::repack_kquant_r16(t, src, row_bytes, out_dim, in_dim, g, g + 1, dst); }, 16);
    return owner;
}

std::string describe_weight_compute(GgmlType t) {
    const auto& k = simd::quant_kernels();
    if (t == GgmlType::kF32) return "in place, fp32 GEMM (OpenBLAS)";
    const bool block32 = t == GgmlType::kQ4_0 || t == GgmlType::kQ4_1 || t == GgmlType::kQ8_0;
    const bool repacked = (block32 && k.gemm != nullptr) || (k.typed->r16 != nullptr && k.typed->r16(t) != nullptr);
    if (!block32 && !is_typed_weight(t)) return "not supported";
    const ActFormat fmt = kernels::ref::activation_format(t);
    std::string how = fmt == ActFormat::kF32    ? "widened in registers, fp32 FMA"
                      : fmt == ActFormat::kQ8_0 ? "Q8_0 activations, integer dots"
                      : fmt == ActFormat::kQ8_1 ? "Q8_1 activations, integer dots"
                                                : "Q8_K activations, integer dots";
    std::string where = std::string(repacked ? "" : "in place, ") + how + " (" + k.isa;
    if (repacked) return where + ", repacked 16 rows per vector at load)";
    const bool tiles = k.typed->tile != nullptr && k.typed->tile(t) != nullptr;
    return where + (tiles ? ", prefill on 16-row tiles unpacked per task)" : ")");
}

}  // namespace lazyattn::backend::cpu
