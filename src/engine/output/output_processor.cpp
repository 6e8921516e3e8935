#include "engine/output/output_processor.h"

#include <algorithm>

#include "core/timer.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {
namespace {

// Where s stands as its latest token is streamed: the whole prompt is in place.
EventTimings token_timings(const SequenceState& s) {
    EventTimings t;
    t.prompt_tokens = s.stats.num_prompt_tokens;
    t.cached = s.stats.reused_tokens;
    t.processed = t.prompt_tokens;
    t.prompt_ms = std::max(0.0, s.t_first_token - s.t_admit);
    t.generated = s.num_generated;
    t.decode_ms = std::max(0.0, now_ms() - s.t_first_token);
    return t;
}

}  // namespace

RequestOutput& OutputProcessor::output_of(SequenceState& s) {
    if (s.output == nullptr) {
        s.output =
            std::make_unique<RequestOutput>(tokenizer_, StopMatcher(s.request.stop), s.request.shown_control_tokens);
    }
    return *s.output;
}

FinishReason OutputProcessor::on_token(SequenceState& s, int32_t token, TokenLogprobs* logprobs) {
    const RagRequest& r = s.request;
    if (!r.ignore_eos && tokenizer_.is_end_of_generation(token)) {
        s.handle->push_token(token, "", logprobs, token_timings(s));
        return FinishReason::kStop;
    }
    RequestOutput& out = output_of(s);
    s.handle->push_token(token, out.stops.push(out.decoder.push(token)), logprobs, token_timings(s));
    if (out.stops.stopped()) {
        s.handle->set_stop_word(out.stops.stop_word());
        return FinishReason::kStop;
    }
    return s.at_length_limit(context_length_) ? FinishReason::kLength : FinishReason::kNone;
}

void OutputProcessor::flush(SequenceState& s) {
    RequestOutput& out = output_of(s);
    s.handle->push_text(out.stops.push(out.decoder.flush()) + out.stops.flush());
}

}  // namespace lazyattn::engine
