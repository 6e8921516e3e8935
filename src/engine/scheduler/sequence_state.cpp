#include "engine/scheduler/sequence_state.h"

#include "engine/output/output_processor.h"

namespace lazyattn::engine {

SequenceState::SequenceState() = default;
SequenceState::~SequenceState() = default;

}  // namespace lazyattn::engine
