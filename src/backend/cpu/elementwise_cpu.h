// Row-wise and elementwise CPU ops: RMSNorm, SwiGLU, residual add, standalone RoPE.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/params/rope_params.h"

namespace lazyattn::backend::cpu {

void rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps,
             ThreadPool& pool);
void swiglu(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool);
// out = gelu_tanh(gate) * up (Gemma); portable code, a few flops per FFN element.
void geglu(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool);
void add_inplace(float* x, const float* y, int64_t n);
// Structured output's token mask on one row of logits (kernels::ref::apply_token_bitmask is the
// definition; the CUDA backend applies the same one): logits the grammar's bitmask does not allow
// become -inf. Whole words of allowed tokens are skipped. The grammar matcher calls it.
void apply_token_bitmask(float* logits, int32_t vocab_size, const int32_t* bitmask, int32_t bitmask_words);
void rope_apply(const kernels::RopeApplyParams& p, ThreadPool& pool);

}  // namespace lazyattn::backend::cpu
