#include "engine/output/output_processor.h"

#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {

RequestOutput& OutputProcessor::output_of(SequenceState& s) {
    if (s.output == nullptr) s.output = std::make_unique<RequestOutput>(tokenizer_, StopMatcher(s.request.stop));
    return *s.output;
}

FinishReason OutputProcessor::on_token(SequenceState& s, int32_t token, TokenLogprobs* logprobs) {
    const RagRequest& r = s.request;
    if (!r.ignore_eos && tokenizer_.is_end_of_generation(token)) {
        s.handle->push_token(token, "", logprobs);
        return FinishReason::kStop;
    }
    RequestOutput& out = output_of(s);
    s.handle->push_token(token, out.stops.push(out.decoder.push(token)), logprobs);
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
