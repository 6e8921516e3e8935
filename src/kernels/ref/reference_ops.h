// Scalar reference implementations: slow, obvious, computed in double where it helps. These are
// the truth every optimized kernel is tested against; nothing on a hot path calls them.
#pragma once

#include <cstdint>

#include "kernels/params/attention_params.h"
#include "kernels/params/rope_params.h"

namespace lazyattn::kernels::ref {

// out[r, :] = x[r, :] / rms(x[r, :]) * weight; rms over `dim`, eps inside the root.
void rmsnorm(const float* x, const float* weight, float* out, int64_t num_rows, int64_t dim, float eps);

// y[r, o] = sum_i x[r, i] * w[o, i] (+ bias[o]); w is [out_dim, in_dim] row-major.
void matmul(const float* x, const float* w, const float* bias, float* y, int64_t num_rows, int64_t in_dim,
            int64_t out_dim);

// out = silu(gate) * up, elementwise over n.
void swiglu(const float* gate, const float* up, float* out, int64_t n);

// out = gelu(gate) * up, elementwise over n, with GELU's tanh approximation (Gemma's
// gelu_pytorch_tanh): gelu(x) = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
void geglu(const float* gate, const float* up, float* out, int64_t n);

// Rotates one head vector (head_dim floats) to `position`, reading `in`, writing `out`.
void rope_rotate(const float* in, float* out, double position, int32_t head_dim, const RopeParams& rope);

void rope_apply(const RopeApplyParams& p);

// Paged attention with per-span RoPE offsets and an optional sliding window (on logical
// distance), two-pass softmax in double.
void attention(const AttentionParams& p);

// The attention mass each key receives (Backend::attention_mass): for every sequence of p, for
// each of its spans in order, num_tokens floats: the softmax weight of that key summed over
// the sequence's query rows and all query heads (0 for keys no row sees). p.out is not used.
void attention_mass(const AttentionParams& p, float* mass);

// Structured output's token mask (grammar::ConstraintMatcher; XGrammar's layout): row r of
// `bitmask` is `bitmask_words` 32-bit words, bit (i % 32) of word i / 32 set when token i may come
// next. Every logit of logits[r, 0:vocab_size) whose bit is clear, or lies past the mask's
// 32 * bitmask_words bits, becomes -infinity; the others are left as they are.
void apply_token_bitmask(float* logits, int64_t num_rows, int32_t vocab_size, const int32_t* bitmask,
                         int32_t bitmask_words);

}  // namespace lazyattn::kernels::ref
