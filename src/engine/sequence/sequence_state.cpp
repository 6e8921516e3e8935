#include "engine/sequence/sequence_state.h"

#include "engine/sequence/request_output.h"

namespace lazyattn::engine {

SequenceState::SequenceState() = default;
SequenceState::~SequenceState() = default;

}  // namespace lazyattn::engine
