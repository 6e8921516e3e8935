// TokenLogprobs: the log-probability of one token under a distribution given by logits, and the
// distribution's highest alternatives, as OpenAI's logprobs / top_logprobs report them. Computed
// with a numerically stable log-softmax over the whole vocabulary (max subtracted, sum in double).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace lazyattn::engine {

// (token id, logprob), best first; ties broken by the lower id.
using TopLogprobs = std::vector<std::pair<int32_t, float>>;

struct TokenLogprobs {
    float logprob = 0;  // log P(token)
    TopLogprobs top;    // the k most likely tokens
};

// log(sum_i exp(logits[i])), stable for any finite logits.
double log_sum_exp(const float* logits, int32_t n);

// The `k` highest logits' ids (ties: lower id first), best first; k is clamped to [0, n].
std::vector<int32_t> top_ids(const float* logits, int32_t n, int32_t k);

// log P(token) under softmax(logits), plus the k most likely tokens with their logprobs.
TokenLogprobs token_logprobs(const float* logits, int32_t n, int32_t token, int32_t k);

}  // namespace lazyattn::engine
