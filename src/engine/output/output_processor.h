// OutputProcessor: what a sampled token means for its request (vLLM v1's OutputProcessor with
// its stop checks): end of generation, the text it completes (streamed through the request's
// handle, held back while it may still be the start of a stop string), stop strings, and the
// finish reasons "stop" and "length". It owns the tokenizer's part of generation, so the
// Scheduler never sees text.
#pragma once

#include <cstdint>
#include <string>

#include "engine/request/finish_reason.h"
#include "engine/request/token_logprobs.h"
#include "engine/sequence/request_output.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

struct SequenceState;

class OutputProcessor {
public:
    // `context_length`: the positions requests may use (a request reaching it ends with "length").
    OutputProcessor(const tokenizer::Tokenizer& tokenizer, int32_t context_length)
        : tokenizer_(tokenizer), context_length_(context_length) {}

    // The token just sampled for s (already counted in s.num_generated and s.history, and
    // queued at the end of s.kv.tail_tokens): streams
    // its text and returns the finish reason it causes (stop or length), or kNone to go on.
    // `logprobs` (null when none were asked) is moved into the request's handle: the runner's
    // output is not read after this step, so its top alternatives are not copied.
    FinishReason on_token(SequenceState& s, int32_t token, TokenLogprobs* logprobs);
    // The request ends with "stop" or "length": releases the text held back.
    void flush(SequenceState& s);

private:
    RequestOutput& output_of(SequenceState& s);

    const tokenizer::Tokenizer& tokenizer_;
    int32_t context_length_;
};

}  // namespace lazyattn::engine
