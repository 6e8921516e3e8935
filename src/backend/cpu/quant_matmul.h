// Matmul on quantized weights: activations are quantized per row (Q8_0 or Q8_1, as llama.cpp
// does), then integer dot products run tile by tile: a tile of weight rows stays in L1 while
// groups of four activation rows stream past it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/large_buffer.h"
#include "core/thread_pool.h"
#include "kernels/params/matmul_params.h"

namespace lazyattn::backend::cpu {

// p.w_type must be a quantized type (not kF32). `scratch` holds the quantized activations.
void quant_matmul(const kernels::MatmulParams& p, ThreadPool& pool, std::vector<uint8_t>& scratch);

// Decode products of one input with one or several repacked weights of one type (Q, K, V): the
// input is quantized once and all matrices' row groups share one parallel region. Returns false, doing
// nothing, when the products do not qualify (then run them one by one).
bool quant_matmul_shared_input(const kernels::MatmulParams* ps, int count, ThreadPool& pool,
                               std::vector<uint8_t>& scratch);

// Memory for repacked weights: matrices are packed back to back into large chunks (huge-page
// candidates, see core/large_buffer.h); each matrix keeps its chunk alive. Chunks are not
// prefaulted: the repack writes every byte it uses, and the unused end of a chunk (the last
// one's, or where the next matrix did not fit) never becomes resident, so the resident memory
// is the repacked bytes (to a page).
class WeightArena {
public:
    uint8_t* allocate(size_t bytes);  // 64-byte aligned, zeroed
    // The buffer that holds the last allocation (to keep it alive).
    const std::shared_ptr<LargeBuffer>& last_buffer() const { return chunk_; }

private:
    static constexpr size_t kChunkBytes = size_t(256) << 20;
    std::shared_ptr<LargeBuffer> chunk_;
    size_t used_ = 0;
};

// The weight repacked for this CPU's kernels (simd/quant_gemm.h, lanes = rows) in `arena`, or
// nullptr where the CPU or the type has no repacked kernels.
std::shared_ptr<const void> prepare_quant_weight(const void* w, kernels::GgmlType type, int64_t in_dim, int64_t out_dim,
                                                 WeightArena& arena);

}  // namespace lazyattn::backend::cpu
