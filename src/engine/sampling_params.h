// Sampling settings of one request. temperature <= 0 means greedy (argmax).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace lazyattn::engine {

struct SamplingParams {
    float temperature = 0.0f;
    int32_t top_k = 0;               // 0: off
    float top_p = 1.0f;              // 1: off
    float min_p = 0.0f;              // 0: off
    float repetition_penalty = 1.0f; // 1: off; applied to the last repeat_last_n tokens
    int32_t repeat_last_n = 64;
    uint64_t seed = 0;

    Status validate() const;
};

}  // namespace lazyattn::engine
