// Next-token selection on the device: greedy argmax, and top-k / top-p sampling with a uniform
// draw supplied per row (the host's seeded generator keeps runs reproducible).
//
// Semantics (as engine::Sampler, without repetition penalty and min-p): candidates ordered by
// logit descending, ties by index ascending; top-k keeps the first k; top-p keeps the shortest
// prefix of those whose probability at temperature 1 (normalized over the top-k set) reaches
// top_p; the token is the first candidate of the kept prefix at which the running sum of
// exp((logit - max) / temperature) reaches u * total. Temperature <= 0 means argmax (the first
// maximal index). NaN logits count as -inf.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/status.h"

namespace lazyattn::backend::cuda {

struct SampleParams {
    const float* logits;  // [num_rows, row_stride], the first vocab_size of each row used
    int64_t row_stride;
    int32_t num_rows;
    int32_t vocab_size;
    const float* temperature;  // [num_rows]; <= 0: greedy
    const int32_t* top_k;      // [num_rows]; <= 0 or >= vocab_size: off
    const float* top_p;        // [num_rows]; >= 1: off
    const float* uniform;      // [num_rows] the draw u in [0, 1)
    int32_t* tokens;           // [num_rows] the chosen token ids
};

Status launch_sample(const SampleParams& p, cudaStream_t stream);

// Structured output's token mask, applied where the logits live (kernels::ref::apply_token_bitmask
// is the definition): logits[r, i] = -inf unless bit i % 32 of bitmask[r * bitmask_words + i / 32]
// is set (tokens past the mask's bits included); allowed logits are left untouched. The
// grammar's bitmask is uploaded per row, 4 bytes per 32 tokens, instead of the logits coming
// back; greedy and top-k / top-p sampling then run on the masked rows unchanged.
Status launch_apply_token_bitmask(float* logits, int64_t row_stride, int32_t num_rows, int32_t vocab_size,
                                  const int32_t* bitmask, int32_t bitmask_words, cudaStream_t stream);

// tokens[r] = the first index of the maximum of logits[r, 0:vocab_size).
Status launch_argmax(const float* logits, int64_t row_stride, int32_t num_rows, int32_t vocab_size, int32_t* tokens,
                     cudaStream_t stream);

}  // namespace lazyattn::backend::cuda
