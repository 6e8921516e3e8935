// Sampling settings of one request. temperature <= 0 means greedy (argmax).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/status.h"
#include "grammar/constraint.h"

namespace lazyattn::engine {

struct SamplingParams {
    float temperature = 0.0f;
    int32_t top_k = 0;                // 0: off
    float top_p = 1.0f;               // 1: off
    float min_p = 0.0f;               // 0: off
    float repetition_penalty = 1.0f;  // 1: off; applied to the last repeat_last_n tokens (prompt included)
    int32_t repeat_last_n = 64;
    // OpenAI semantics, over the GENERATED tokens only (never the prompt), with c(t) the number
    // of times token t was generated so far: logit[t] -= frequency_penalty * c(t)
    //                                                  + presence_penalty * (c(t) > 0).
    float presence_penalty = 0.0f;   // [-2, 2]; 0: off
    float frequency_penalty = 0.0f;  // [-2, 2]; 0: off
    // -1: none; 0..20: report the sampled token's logprob plus this many top alternatives (see
    // Sampler for which distribution).
    int32_t logprobs = -1;
    // The logprobs are of the distribution the token was drawn from, after the whole chain
    // (top-k, top-p, min-p, temperature; renormalised over the tokens it kept): llama-server's
    // post_sampling_probs. Greedy: the chosen token, probability 1. See Sampler.
    bool post_sampling_probs = false;
    uint64_t seed = 0;
    // OpenAI's logit_bias: (token id, bias in [-100, 100]) added to that token's logit after the
    // penalties, before everything else (so logprobs include it, as vLLM's processed logprobs do).
    std::vector<std::pair<int32_t, float>> logit_bias;
    // Structured output: the grammar the generated tokens must follow (compiled by the server
    // against this model's vocabulary; null: none). Tokens it does not allow are masked to
    // -infinity after logit_bias, before temperature, top-k, top-p and min-p.
    std::shared_ptr<const grammar::CompiledConstraint> constraint;

    static constexpr int32_t kMaxLogprobs = 20;

    Status validate() const;
    // kInvalidArgument when logit_bias names a token outside [0, vocab_size) (the engine checks
    // every request; the server first, to name the field).
    Status check_vocabulary(int32_t vocab_size) const;
    // Nothing but the constraint's token mask changes the logits before the draw and no
    // logprobs are asked: the next token is the (masked) logits' argmax, or a temperature /
    // top-k / top-p draw from them (min-p off), which is what a device backend may sample where
    // the logits live (backend::SampleRow, the grammar's bitmask uploaded with the row). The
    // penalties and logit_bias come before the mask in the rule and the device has neither, so
    // their rows stay on the host.
    bool device_samplable() const {
        return repetition_penalty == 1.0f && presence_penalty == 0.0f && frequency_penalty == 0.0f &&
               logit_bias.empty() && logprobs < 0 && (temperature <= 0.0f || min_p <= 0.0f);
    }
};

}  // namespace lazyattn::engine
