// The end of a measured selection of recomputed rows (@query, @query-all, @first-query: the
// question's attention mass from the probe phase; @deviation: each token's KV deviation): each
// document's rows are chosen from the scores the measurement left (select_by_mass) within its
// budget, and the patch phase that follows grows by them.
#pragma once

#include <cstdint>

#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {

// Chooses s's recomputed rows from its documents' selection scores (cleared) into their patch
// blocks (reserved at admission for the most the budget allows); returns how many.
int32_t choose_measured_rows(SequenceState& s, int32_t block_size);

}  // namespace lazyattn::engine
