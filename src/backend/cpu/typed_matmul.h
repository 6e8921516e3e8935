// Matmul on the weight types computed by row dot kernels (simd/typed_dot.h): Q5_0, Q5_1,
// Q2_K..Q6_K, F16 and BF16, read in place from the mapped file. Activations are brought to the
// type's format once per row (Q8_0/Q8_1/Q8_K, or fp32 for the 16-bit types). Decode (few rows)
// splits the weight rows among threads so each streams its slice once; prefill runs tiles of
// 16 weight rows x 64 activation rows, each weight row decoded once per 4 activation rows while
// the tile stays in cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/quant_matmul.h"
#include "core/thread_pool.h"
#include "kernels/params/matmul_params.h"

namespace lazyattn::backend::cpu {

// True for the types typed_matmul serves.
bool is_typed_weight(kernels::GgmlType t);

// Runs on p.w_prepared when it is set (prepare_typed_weight), else on the file's bytes.
void typed_matmul(const kernels::MatmulParams& p, ThreadPool& pool, std::vector<uint8_t>& scratch);

// Q4_K/Q5_K/Q6_K repacked into `arena` for this CPU's kernels (kernels/ref/kquant_r16_ref.h:
// groups of 16 rows, lanes = rows), or nullptr where the CPU or the type has no such kernels.
std::shared_ptr<const void> prepare_typed_weight(const void* w, kernels::GgmlType t, int64_t in_dim, int64_t out_dim,
                                                 WeightArena& arena, ThreadPool& pool);

// How the CPU backend computes weights of `t` on this host, for `lazyattn info`.
std::string describe_weight_compute(kernels::GgmlType t);

}  // namespace lazyattn::backend::cpu
