// RequestOutput: the text state of one request's generation, which the OutputProcessor keeps in
// the request's SequenceState (kept across preemptions: what was streamed stays streamed).
#pragma once

#include "engine/sequence/stop_matcher.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

struct RequestOutput {
    RequestOutput(const tokenizer::Tokenizer& tokenizer, const StopMatcher& stops,
                  std::shared_ptr<const std::vector<int32_t>> shown_control_tokens = nullptr)
        : decoder(tokenizer, false, std::move(shown_control_tokens)), stops(stops) {}
    tokenizer::StreamDecoder decoder;
    StopMatcher stops;
};

}  // namespace lazyattn::engine
