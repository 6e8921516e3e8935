// Sampler: picks the next token from logits. Order as in llama.cpp's default chain: repetition
// penalty, top-k, top-p, min-p, temperature, then a draw from the seeded generator; greedy when
// the temperature is zero. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "engine/sampling_params.h"

namespace lazyattn::engine {

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);

    // `history`: the tokens so far (prompt and generated), for the repetition penalty.
    int32_t sample(const float* logits, int32_t vocab_size, const std::vector<int32_t>& history);

private:
    SamplingParams params_;
    std::mt19937_64 rng_;
    std::vector<std::pair<float, int32_t>> candidates_;
};

int32_t argmax(const float* logits, int32_t n);

}  // namespace lazyattn::engine
