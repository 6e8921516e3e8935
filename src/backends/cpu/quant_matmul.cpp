#include "backends/cpu/quant_matmul.h"

#include <algorithm>

#include "backends/cpu/simd/quant_dot.h"
#include "kernels/params/quant_blocks.h"

namespace lazyattn::backends::cpu {

using kernels::QuantWeight;

void quant_matmul(const kernels::MatmulParams& p, ThreadPool& pool, std::vector<uint8_t>& scratch) {
    const auto& k = simd::quant_kernels();
    const QuantWeight type = static_cast<QuantWeight>(p.w_type);
    const int64_t nb = p.in_dim / kernels::kQuantBlock;
    const size_t x_row_bytes = nb * kernels::activation_block_bytes(type);
    const size_t w_row_bytes = nb * kernels::weight_block_bytes(type);
    scratch.resize(p.num_rows * x_row_bytes);
    const auto quantize = kernels::uses_q8_1(type) ? k.quantize_q8_1 : k.quantize_q8_0;
    pool.parallel_for(p.num_rows, [&](int64_t r) { quantize(p.x + r * p.in_dim, scratch.data() + r * x_row_bytes, p.in_dim); }, 8);

    const simd::DotRowsFn dot = k.dot(type);
    const auto* w = static_cast<const uint8_t*>(p.w);
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

}  // namespace lazyattn::backends::cpu
