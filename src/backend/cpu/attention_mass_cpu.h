// The attention mass each key receives from a sequence's query rows (Backend::attention_mass),
// on the CPU: what selects document tokens by the question (DocumentReuse's @query).
#pragma once

#include "core/thread_pool.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::backend::cpu {

// mass: kernels::ref::attention_mass's layout (per sequence, per span in order, num_tokens
// floats), the softmax weight of each key summed over the sequence's rows and query heads.
void attention_mass(const kernels::AttentionParams& p, float* mass, ThreadPool& pool);

}  // namespace lazyattn::backend::cpu
