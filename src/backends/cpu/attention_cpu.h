// The optimized CPU paged attention kernel (prefill and decode): online softmax over key blocks,
// the query heads of one KV head processed together (GQA), RoPE offsets applied per span.
#pragma once

#include "core/thread_pool.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::backends::cpu {

void attention(const kernels::AttentionParams& p, ThreadPool& pool);

}  // namespace lazyattn::backends::cpu
