#include "backend/cpu/quant_matmul.h"

#include <algorithm>

#include "backend/cpu/simd/quant_dot.h"
#include "backend/cpu/tile_tasks.h"
#include "core/large_buffer.h"
#include "kernels/params/quant_blocks.h"

namespace lazyattn::backend::cpu {
namespace {

using kernels::GgmlType;

// The types this file serves (the others go to typed_matmul.cpp).
bool is_tiled_quant(kernels::GgmlType t) {
    return t == kernels::GgmlType::kQ4_0 || t == kernels::GgmlType::kQ4_1 || t == kernels::GgmlType::kQ8_0;
}
using simd::QuantActs;

// From this many activation rows on, repacking a weight tile (lanes = weight rows) pays off.
constexpr int64_t kGemmMinRows = 8;

// The register-tiled path (quant_gemm.h): gemv for decode, repacked tiles for prefill.
void quant_matmul_tiled(const kernels::MatmulParams& p, const simd::QuantGemmKernels& g, ThreadPool& pool,
                        std::vector<uint8_t>& scratch) {
    const GgmlType type = p.w_type;
    const int kind = simd::QuantGemmKernels::kind(type);
    const int64_t nb = p.in_dim / kernels::kQuantBlock;
    const size_t rb = nb * kernels::weight_block_bytes(type);
    const auto* w = static_cast<const uint8_t*>(p.w);
    const bool gemm = p.num_rows >= kGemmMinRows;
    const bool r16 =
        p.w_prepared != nullptr && g.pack_from_r16[kind] != nullptr;  // prefill tiles from the repacked form
    scratch.resize(QuantActs::bytes(p.num_rows, nb));
    const QuantActs a = QuantActs::in(scratch.data(), p.num_rows, nb, !gemm && type != GgmlType::kQ8_0);
    pool.parallel_for(
        p.num_rows, [&](int64_t r) { g.prepare_row(p.x + r * p.in_dim, a, r, type); }, 8);
    const int threads = pool.num_threads();

    if (!gemm) {
        // Decode: every thread streams its own slice of the weight rows once; a few slices per
        // thread keep the load even when a core is busy elsewhere.
        const int64_t chunk = std::max<int64_t>(16, (p.out_dim + 4 * threads - 1) / (4 * threads) + 3) / 4 * 4;
        const int64_t num_chunks = (p.out_dim + chunk - 1) / chunk;
        pool.parallel_for(num_chunks, [&](int64_t c) {
            const int64_t o0 = c * chunk, o1 = std::min(p.out_dim, o0 + chunk);
            for (int64_t r = 0; r < p.num_rows; r += 4) {
                const int rows = int(std::min<int64_t>(4, p.num_rows - r));
                g.gemv[kind](w, rb, o0, o1, a.from_row(r), rows, p.y + r * p.out_dim, p.out_dim, p.bias);
            }
        });
        return;
    }

    // Prefill on tiles of kGemmTileRows weight rows, packed per task (tile_tasks.h).
    const size_t packed_bytes = simd::kGemmTileRows * nb * simd::kPackedBytesPerRowBlock;
    for_each_tile_task(pool, p.out_dim, p.num_rows, simd::kGemmTileRows, 64, packed_bytes,
                       [&](uint8_t* packed, int64_t o0, int nw, int64_t r0, int64_t r1) {
                           const int64_t tile = o0 / simd::kGemmTileRows;
                           if (r16) {
                               g.pack_from_r16[kind](static_cast<const uint8_t*>(p.w_prepared), nb, tile,
                                                     simd::r16_groups(p.out_dim), packed);
                           } else {
                               g.pack[kind](w + o0 * rb, rb, nw, nb, packed);
                           }
                           g.gemm_tile[kind](packed, nb, a, r0, r1, p.y + o0, p.out_dim, nw,
                                             p.bias != nullptr ? p.bias + o0 : nullptr);
                       });
}

}  // namespace

void quant_matmul(const kernels::MatmulParams& p, ThreadPool& pool, std::vector<uint8_t>& scratch) {
    // Decode on repacked weights: the same path as several products of one input.
    if (quant_matmul_shared_input(&p, 1, pool, scratch)) return;
    const auto& k = simd::quant_kernels();
    if (k.gemm != nullptr) {
        quant_matmul_tiled(p, *k.gemm, pool, scratch);
        return;
    }
    const GgmlType type = p.w_type;
    const int64_t nb = p.in_dim / kernels::kQuantBlock;
    const size_t x_row_bytes = nb * kernels::activation_block_bytes(type);
    const size_t w_row_bytes = nb * kernels::weight_block_bytes(type);
    scratch.resize(p.num_rows * x_row_bytes);
    const auto quantize = kernels::uses_q8_1(type) ? k.quantize_q8_1 : k.quantize_q8_0;
    pool.parallel_for(
        p.num_rows, [&](int64_t r) { quantize(p.x + r * p.in_dim, scratch.data() + r * x_row_bytes, p.in_dim); }, 8);

    const simd::DotRowsFn dot = k.dot(type);
    const auto* w = static_cast<const uint8_t*>(p.w);
    const simd::TypedTile* tile = k.typed->tile != nullptr ? k.typed->tile(p.w_type) : nullptr;
    if (tile != nullptr && p.num_rows > simd::kMaxDotRows) {
        // Prefill without the register-tiled GEMM (AVX2): the typed prefill tiles, which take
        // these types' Q8_0/Q8_1 activation rows as they are.
        for_each_tile_task(pool, p.out_dim, p.num_rows, simd::kTypedTileRows, 16, tile->packed_bytes(p.in_dim),
                           [&](uint8_t* packed, int64_t o0, int nw, int64_t r0, int64_t r1) {
                               tile->pack(w + o0 * w_row_bytes, w_row_bytes, nw, p.in_dim, packed);
                               tile->gemm(packed, p.in_dim, scratch.data() + r0 * x_row_bytes, x_row_bytes, r1 - r0,
                                          p.y + r0 * p.out_dim + o0, p.out_dim, nw,
                                          p.bias != nullptr ? p.bias + o0 : nullptr);
                           });
        return;
    }
    // Tiles: kOutTile weight rows x kRowTile activation rows; decode (few rows) splits only the
    // weight rows, so every thread streams its own part of the matrix once.
    const int64_t kOutTile = p.num_rows <= simd::kMaxDotRows ? 32 : 16;
    const int64_t kRowTile = 64;
    const int64_t out_tiles = (p.out_dim + kOutTile - 1) / kOutTile;
    const int64_t row_tiles = (p.num_rows + kRowTile - 1) / kRowTile;
    pool.parallel_for(out_tiles * row_tiles, [&](int64_t task) {
        const int64_t o0 = (task % out_tiles) * kOutTile, r0 = (task / out_tiles) * kRowTile;
        const int64_t o1 = std::min(p.out_dim, o0 + kOutTile), r1 = std::min(p.num_rows, r0 + kRowTile);
        float out[simd::kMaxDotRows];
        for (int64_t o = o0; o < o1; ++o) {
            const float b = p.bias != nullptr ? p.bias[o] : 0.0f;
            for (int64_t r = r0; r < r1; r += simd::kMaxDotRows) {
                const int rows = int(std::min<int64_t>(simd::kMaxDotRows, r1 - r));
                dot(w + o * w_row_bytes, scratch.data() + r * x_row_bytes, x_row_bytes, rows, nb, out);
                for (int i = 0; i < rows; ++i) p.y[(r + i) * p.out_dim + o] = out[i] + b;
            }
        }
    });
}

bool quant_matmul_shared_input(const kernels::MatmulParams* ps, int count, ThreadPool& pool,
                               std::vector<uint8_t>& scratch) {
    const auto* g = simd::quant_kernels().gemm;
    if (g == nullptr || count < 1 || !is_tiled_quant(ps[0].w_type)) return false;
    const GgmlType type = ps[0].w_type;
    const int kind = simd::QuantGemmKernels::kind(type);
    if (g->gemv_r16[kind] == nullptr || ps[0].num_rows >= kGemmMinRows) return false;
    for (int i = 0; i < count; ++i) {
        const kernels::MatmulParams& p = ps[i];
        if (p.w_prepared == nullptr || p.w_type != ps[0].w_type || p.x != ps[0].x || p.in_dim != ps[0].in_dim ||
            p.num_rows != ps[0].num_rows) {
            return false;
        }
    }
    const int64_t rows = ps[0].num_rows, nb = ps[0].in_dim / kernels::kQuantBlock;
    scratch.resize(QuantActs::bytes(rows, nb));
    const QuantActs a = QuantActs::in(scratch.data(), rows, nb, false);
    for (int64_t r = 0; r < rows; ++r) g->prepare_row(ps[0].x + r * ps[0].in_dim, a, r, type);
    // Chunks of 16-row groups over all matrices, sized on the total so threads get even shares.
    struct Chunk {
        int matrix;
        int64_t g0, g1;
    };
    int64_t total = 0;
    for (int i = 0; i < count; ++i) total += simd::r16_groups(ps[i].out_dim);
    const int threads = pool.num_threads();
    const int64_t per_chunk = std::max<int64_t>(2, (total + 4 * threads - 1) / (4 * threads) + 1) / 2 * 2;
    // Reused (this runs for every decode matmul); a reference, since workers have their own
    // thread_local instance.
    thread_local std::vector<Chunk> chunk_list;
    std::vector<Chunk>& chunks = chunk_list;
    chunks.clear();
    for (int i = 0; i < count; ++i) {
        const int64_t groups = simd::r16_groups(ps[i].out_dim);
        for (int64_t g0 = 0; g0 < groups; g0 += per_chunk) chunks.push_back({i, g0, std::min(groups, g0 + per_chunk)});
    }
    pool.parallel_for(int64_t(chunks.size()), [&](int64_t c) {
        const kernels::MatmulParams& p = ps[chunks[c].matrix];
        for (int64_t r = 0; r < rows; r += 4) {
            g->gemv_r16[kind](static_cast<const uint8_t*>(p.w_prepared), nb, chunks[c].g0, chunks[c].g1, p.out_dim,
                              a.from_row(r), int(std::min<int64_t>(4, rows - r)), p.y + r * p.out_dim, p.out_dim,
                              p.bias);
        }
    });
    return true;
}

uint8_t* WeightArena::allocate(size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    if (chunk_ == nullptr || used_ + bytes > chunk_->size()) {
        chunk_ = std::make_shared<LargeBuffer>(std::max(bytes, kChunkBytes), /*prefault=*/false);
        used_ = 0;
    }
    uint8_t* p = chunk_->data() + used_;
    used_ += bytes;
    return p;
}

std::shared_ptr<const void> prepare_quant_weight(const void* w, kernels::GgmlType wt, int64_t in_dim, int64_t out_dim,
                                                 WeightArena& arena) {
    const auto* g = simd::quant_kernels().gemm;
    if (!is_tiled_quant(wt) || g == nullptr || in_dim % kernels::kQuantBlock != 0) return nullptr;
    const GgmlType type = wt;
    const int kind = simd::QuantGemmKernels::kind(type);
    if (g->repack_r16[kind] == nullptr) return nullptr;
    const int64_t nb = in_dim / kernels::kQuantBlock;
    const size_t bytes = simd::r16_bytes(type, out_dim, nb);
    uint8_t* dst = arena.allocate(bytes);
    g->repack_r16[kind](static_cast<const uint8_t*>(w), nb * kernels::weight_block_bytes(type), out_dim, nb, dst);
    return std::shared_ptr<const void>(arena.last_buffer(), dst);
}

}  // namespace lazyattn::backend::cpu
