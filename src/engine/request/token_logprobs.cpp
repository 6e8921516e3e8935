#include "engine/request/token_logprobs.h"

#include <algorithm>
#include <cmath>

namespace lazyattn::engine {

double log_sum_exp(const float* logits, int32_t n) {
    float max_logit = -INFINITY;
    for (int32_t i = 0; i < n; ++i) max_logit = std::max(max_logit, logits[i]);
    if (!std::isfinite(max_logit)) return max_logit;  // all -inf (or +inf present): nothing to normalize
    double sum = 0.0;
    for (int32_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - double(max_logit));
    return double(max_logit) + std::log(sum);
}

std::vector<int32_t> top_ids(const float* logits, int32_t n, int32_t k) {
    k = std::clamp(k, 0, n);
    std::vector<int32_t> top;
    if (k == 0) return top;
    top.reserve(size_t(k) + 1);
    // Better: higher logit, or the same logit and a lower id. `top` stays sorted best first; a
    // candidate is inserted only when it beats the worst kept (rare after the first few), so the
    // scan is O(n) in practice for the small k OpenAI allows (at most 20).
    auto better = [logits](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    for (int32_t i = 0; i < n; ++i) {
        if (int32_t(top.size()) == k && !better(i, top.back())) continue;
        top.insert(std::upper_bound(top.begin(), top.end(), i, better), i);
        if (int32_t(top.size()) > k) top.pop_back();
    }
    return top;
}

TokenLogprobs token_logprobs(const float* logits, int32_t n, int32_t token, int32_t k) {
    const double log_z = log_sum_exp(logits, n);
    TokenLogprobs out;
    out.logprob = float(double(logits[token]) - log_z);
    for (int32_t id : top_ids(logits, n, k)) out.top.emplace_back(id, float(double(logits[id]) - log_z));
    return out;
}

}  // namespace lazyattn::engine
