// The optimized CPU paged attention kernel (prefill and decode): online softmax over key blocks,
// the query heads of one KV head processed together (GQA), RoPE offsets applied per span.
#pragma once

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::backends::cpu {

void attention(const kernels::AttentionParams& p, ThreadPool& pool);

// The instruction set of the per-row kernel that serves shapes the AVX-512 tiles do not (and
// every shape under LAZYATTN_CPU_ISA=avx2|scalar).
CpuIsa attention_rows_isa();

}  // namespace lazyattn::backends::cpu
