// Sampler: picks the next token from logits. Order as in llama.cpp's default chain: repetition
// penalty, presence and frequency penalties (OpenAI), logit_bias, top-k, top-p, min-p, temperature, then a
// draw from the seeded generator; greedy when the temperature is zero. Deterministic for a given
// seed.
//
// The draw is one uniform u per sampled token (next_uniform()) and the explicit rule of
// pick_by_running_sum(), the rule the device's sampling kernel follows too
// (backend::SampleRow): a row sampled on the device with this sampler's u picks the token the
// host would have.
//
// Structured output (SamplingParams::constraint): the sampler owns the request's grammar matcher;
// tokens the grammar does not allow are masked after logit_bias (so logprobs are those of the
// masked distribution) and the sampled token is fed to the matcher.
//
// Logprobs (when SamplingParams::logprobs >= 0) are those of the model's distribution AFTER the
// penalties and logit_bias but BEFORE temperature, top-k, top-p and min-p: log_softmax(penalized logits) over
// the whole vocabulary. This is what vLLM reports by default ("processed" logits without the
// sampling transforms) and does not depend on the temperature, so a greedy and a sampled run
// report the same numbers for the same token. The top alternatives are the `logprobs` most likely
// tokens, best first, ties broken by the lower id; at temperature 0 the sampled token is the first.
//
// With SamplingParams::post_sampling_probs they are those of the distribution the draw used
// instead: the tokens the chain kept (top-k, top-p, min-p), softmax(logit / temperature) over
// them; a token the chain dropped has probability 0 (logprob -inf) and is never listed among the
// alternatives, so fewer than `logprobs` come back when fewer were kept. Greedy sampling keeps one
// token, the argmax, with probability 1.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "engine/request/sampling_params.h"
#include "engine/request/token_logprobs.h"

namespace lazyattn::engine {

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);

    // `history`: the prompt's tokens, then the tokens generated so far; its first
    // `num_prompt_tokens` are the prompt. The repetition penalty reads the last repeat_last_n
    // tokens of all of it; the presence and frequency penalties only the generated ones.
    // `logprobs`: filled when not null and the params ask for logprobs (left alone otherwise).
    int32_t sample(const float* logits, int32_t vocab_size, std::span<const int32_t> history, size_t num_prompt_tokens,
                   TokenLogprobs* logprobs = nullptr);

    // The logits after the penalties of the latest sample() (what logprobs are computed from).
    const std::vector<float>& penalized_logits() const { return penalized_; }

    // The draw of the next token sampled at a temperature (greedy tokens draw none): u in
    // [0, 1) from the seeded generator, a multiple of 2^-24 so that it is exactly a float and
    // the device kernel, which takes u as a float, sees the number this sampler's own draw would
    // use. sample() calls it; a caller sampling on the device calls it instead of sample().
    float next_uniform();

    // Structured output: computes the grammar's mask for the next sample() now (the runner calls
    // it on a helper thread while the step's forward runs); a no-op without a constraint.
    void prepare_constraint() {
        if (matcher_) matcher_->prepare();
    }
    // The grammar's bitmask for the next token (empty without a constraint): words whose content
    // prepare_constraint() sets, at a place that stays put for the sampler's life, so a device
    // backend can mask the logits where they live (backend::SampleRow) with what the helper
    // thread computed. The sampler's own rule is unchanged: this mask after the penalties and
    // logit_bias, before temperature, top-k, top-p and min-p.
    std::span<const int32_t> constraint_bitmask() const {
        return matcher_ ? matcher_->bitmask() : std::span<const int32_t>{};
    }
    // A token sampled elsewhere (the device, from logits masked by constraint_bitmask()) is fed
    // to the grammar as sample() feeds its own; returns the token to emit: `token`, or the
    // grammar's stop token when the grammar refuses it (nothing it allows was left to pick).
    int32_t accept_sampled(int32_t token);

private:
    void apply_repetition_penalty(std::span<const int32_t> history);
    void apply_presence_frequency(std::span<const int32_t> generated);
    // The chain: candidates_ becomes the tokens kept, best first, and weights_ their unnormalised
    // probabilities at the temperature.
    void keep_candidates();
    int32_t draw();
    // `token`'s logprob and the best `k` of the distribution keep_candidates() left.
    TokenLogprobs post_sampling_logprobs(int32_t token, int32_t k) const;

    SamplingParams params_;
    std::mt19937_64 rng_;
    std::vector<float> penalized_;
    std::vector<int32_t> sorted_;
    std::vector<std::pair<float, int32_t>> candidates_;
    std::vector<double> weights_;
    std::unique_ptr<grammar::ConstraintMatcher> matcher_;  // made with the sampler when constrained
};

int32_t argmax(const float* logits, int32_t n);

// The selection rule of every sampled draw, here and on the device: the first index at which the
// running sum of `weights` (non-negative, in candidate order) reaches u * their total; the last
// index when rounding leaves the sum short of it. The device sums in float and fixed point in
// another order, so for a u within rounding (~1e-6 relative) of a boundary between two
// candidates the two may pick neighbours; everywhere else they pick the same one.
size_t pick_by_running_sum(std::span<const double> weights, double u);

}  // namespace lazyattn::engine
