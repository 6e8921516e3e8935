#include "engine/sequence/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace lazyattn::engine {

Status SamplingParams::check_vocabulary(int32_t vocab_size) const {
    for (const auto& [id, bias] : logit_bias) {
        if (id < 0 || id >= vocab_size) {
            return invalid_argument("logit_bias names token id " + std::to_string(id) +
                                    ", outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
        }
    }
    return {};
}

Status SamplingParams::validate() const {
    if (!(temperature >= 0.0f) || !std::isfinite(temperature)) return invalid_argument("temperature must be >= 0");
    if (top_k < 0) return invalid_argument("top_k must be >= 0");
    if (!(top_p > 0.0f && top_p <= 1.0f)) return invalid_argument("top_p must be in (0, 1]");
    if (!(min_p >= 0.0f && min_p <= 1.0f)) return invalid_argument("min_p must be in [0, 1]");
    if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
        return invalid_argument("repetition_penalty must be > 0");
    }
    if (repeat_last_n < 0) return invalid_argument("repeat_last_n must be >= 0");
    if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
        return invalid_argument("presence_penalty must be in [-2, 2]");
    }
    if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
        return invalid_argument("frequency_penalty must be in [-2, 2]");
    }
    if (logprobs < -1 || logprobs > kMaxLogprobs) {
        return invalid_argument("logprobs must be in [0, " + std::to_string(kMaxLogprobs) + "] (or -1: none)");
    }
    for (const auto& [id, bias] : logit_bias) {
        if (id < 0) return invalid_argument("logit_bias token ids must be >= 0");
        if (!(bias >= -100.0f && bias <= 100.0f)) return invalid_argument("logit_bias values must be in [-100, 100]");
    }
    return {};
}

int32_t argmax(const float* logits, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

size_t pick_by_running_sum(std::span<const double> weights, double u) {
    double total = 0.0;
    for (double w : weights) total += w;
    const double target = u * total;
    double cum = 0.0;
    for (size_t i = 0; i < weights.size(); ++i) {
        cum += weights[i];
        if (cum >= target) return i;
    }
    return weights.empty() ? 0 : weights.size() - 1;
}

Sampler::Sampler(const SamplingParams& params)
    : params_(params), rng_(params.seed), matcher_(params.constraint ? params.constraint->new_matcher() : nullptr) {}

float Sampler::next_uniform() {
    // The generator's top 24 bits: an integer below 2^24 times 2^-24 is exact in a float.
    return float(rng_() >> 40) * 0x1p-24f;
}

int32_t Sampler::sample(const float* logits, int32_t vocab_size, std::span<const int32_t> history,
                        size_t num_prompt_tokens, TokenLogprobs* logprobs) {
    penalized_.assign(logits, logits + vocab_size);
    apply_repetition_penalty(history);
    apply_presence_frequency(history.subspan(std::min(num_prompt_tokens, history.size())));
    for (const auto& [id, bias] : params_.logit_bias) {
        if (id < vocab_size) penalized_[id] += bias;
    }
    if (matcher_) matcher_->mask_logits(penalized_);
    const int32_t token = accept_sampled(params_.temperature <= 0.0f ? argmax(penalized_.data(), vocab_size) : draw());
    if (logprobs != nullptr && params_.logprobs >= 0) {
        if (!params_.post_sampling_probs) {
            *logprobs = token_logprobs(penalized_.data(), vocab_size, token, params_.logprobs);
        } else if (params_.temperature <= 0.0f) {
            // Greedy keeps one token: the argmax, certain (a grammar's fallback stop token too).
            logprobs->logprob = 0.0f;
            logprobs->top.clear();
            if (params_.logprobs > 0) logprobs->top.push_back({token, 0.0f});
        } else {
            *logprobs = post_sampling_logprobs(token, params_.logprobs);
        }
    }
    return token;
}

int32_t Sampler::accept_sampled(int32_t token) {
    if (matcher_ && !matcher_->accept(token)) {
        // Nothing the grammar allows was left to pick (every allowed logit -inf): end the output
        // rather than emit a token outside the grammar.
        return matcher_->stop_token() >= 0 ? matcher_->stop_token() : token;
    }
    return token;
}

TokenLogprobs Sampler::post_sampling_logprobs(int32_t token, int32_t k) const {
    double total = 0.0;
    for (double w : weights_) total += w;
    TokenLogprobs out;
    out.logprob = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < weights_.size(); ++i) {
        const float lp =
            weights_[i] > 0.0 ? float(std::log(weights_[i] / total)) : -std::numeric_limits<float>::infinity();
        if (candidates_[i].second == token) out.logprob = lp;
        // Best first already (candidates_ are sorted by logit, ties by id); a dropped token never.
        if (int32_t(out.top.size()) < k && weights_[i] > 0.0) out.top.push_back({candidates_[i].second, lp});
    }
    return out;
}

void Sampler::apply_repetition_penalty(std::span<const int32_t> history) {
    if (params_.repetition_penalty == 1.0f || params_.repeat_last_n <= 0) return;
    // As in CTRL / llama.cpp: divide positive logits, multiply negative ones, once per token.
    const int32_t vocab = int32_t(penalized_.size());
    std::unordered_set<int32_t> seen;
    const size_t from = history.size() > size_t(params_.repeat_last_n) ? history.size() - params_.repeat_last_n : 0;
    for (size_t i = from; i < history.size(); ++i) {
        const int32_t t = history[i];
        if (t < 0 || t >= vocab || !seen.insert(t).second) continue;
        float& l = penalized_[t];
        l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    }
}

void Sampler::apply_presence_frequency(std::span<const int32_t> generated) {
    if (params_.presence_penalty == 0.0f && params_.frequency_penalty == 0.0f) return;
    const int32_t vocab = int32_t(penalized_.size());
    sorted_.assign(generated.begin(), generated.end());
    std::sort(sorted_.begin(), sorted_.end());
    for (size_t i = 0; i < sorted_.size();) {
        size_t j = i;
        while (j < sorted_.size() && sorted_[j] == sorted_[i]) ++j;
        const int32_t t = sorted_[i];
        if (t >= 0 && t < vocab) {
            penalized_[t] -= params_.frequency_penalty * float(j - i) + params_.presence_penalty;
        }
        i = j;
    }
}

int32_t Sampler::draw() {
    keep_candidates();
    return candidates_[pick_by_running_sum(weights_, next_uniform())].second;
}

void Sampler::keep_candidates() {
    const size_t n = penalized_.size();
    candidates_.resize(n);
    for (size_t i = 0; i < n; ++i) candidates_[i] = {penalized_[i], int32_t(i)};
    auto by_logit = [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    size_t keep = n;
    if (params_.top_k > 0 && size_t(params_.top_k) < keep) keep = params_.top_k;
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), by_logit);
    candidates_.resize(keep);

    // Probabilities at temperature 1 decide top-p and min-p (as llama.cpp applies temperature last).
    std::vector<double> probs(keep);
    const double max_logit = candidates_[0].first;
    double sum = 0.0;
    for (size_t i = 0; i < keep; ++i) sum += (probs[i] = std::exp(double(candidates_[i].first) - max_logit));
    if (params_.top_p < 1.0f) {
        double cum = 0.0;
        size_t cut = keep;
        for (size_t i = 0; i < keep; ++i) {
            cum += probs[i] / sum;
            if (cum >= params_.top_p) {
                cut = i + 1;
                break;
            }
        }
        keep = cut;
    }
    if (params_.min_p > 0.0f) {
        size_t cut = 1;
        while (cut < keep && probs[cut] >= params_.min_p * probs[0]) ++cut;
        keep = cut;
    }
    candidates_.resize(keep);
    weights_.resize(keep);
    for (size_t i = 0; i < keep; ++i) {
        weights_[i] = std::exp((double(candidates_[i].first) - max_logit) / params_.temperature);
    }
}

}  // namespace lazyattn::engine
