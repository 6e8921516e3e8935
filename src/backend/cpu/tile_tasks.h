// The task split every prefill GEMM on packed weight tiles shares: tasks are (tile of
// `tile_rows` weight rows, chunk of activation rows); each task packs its tile into 64-byte
// aligned thread-local memory, so activation rows are split into chunks only when tiles are too
// few to keep every thread busy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace lazyattn::backend::cpu {

// fn(packed, o0, nw, r0, r1): weight rows [o0, o0 + nw), activation rows [r0, r1), `packed`
// holding `packed_bytes` of scratch. min_chunk_rows: the fewest activation rows worth a chunk.
template <typename Fn>
void for_each_tile_task(ThreadPool& pool, int64_t out_dim, int64_t num_rows, int64_t tile_rows, int64_t min_chunk_rows,
                        size_t packed_bytes, Fn&& fn) {
    const int64_t threads = pool.num_threads();
    const int64_t tiles = (out_dim + tile_rows - 1) / tile_rows;
    const int64_t chunks =
        std::clamp<int64_t>((4 * threads + tiles - 1) / tiles, 1, (num_rows + min_chunk_rows - 1) / min_chunk_rows);
    const int64_t rows_per_chunk = (num_rows + chunks - 1) / chunks;
    pool.parallel_for(tiles * chunks, [&](int64_t task) {
        thread_local std::vector<uint8_t> packed_buf;
        if (packed_buf.size() < packed_bytes + 64) packed_buf.resize(packed_bytes + 64);
        auto* packed =
            reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(packed_buf.data()) + 63) & ~uintptr_t(63));
        const int64_t o0 = (task % tiles) * tile_rows, chunk = task / tiles;
        const int nw = int(std::min<int64_t>(tile_rows, out_dim - o0));
        const int64_t r0 = chunk * rows_per_chunk, r1 = std::min(num_rows, r0 + rows_per_chunk);
        if (r0 < r1) fn(packed, o0, nw, r0, r1);
    });
}

}  // namespace lazyattn::backend::cpu
