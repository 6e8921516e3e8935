// The KV blocks each feature of a request needs, written once: the worst case a request is
// checked against when it arrives (Scheduler::check_fits) and the fresh blocks its admission
// allocates (KvManager::allocate) count with the same functions, so a feature cannot be
// budgeted one way and allocated another.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/request/cache_mode.h"
#include "engine/request/rag_request.h"
#include "kv/kv_shape.h"

namespace lazyattn::engine::block_budget {

using kv::blocks_for;

// Segment d computed (a segment job): all its tokens.
inline int32_t segment(const RagRequest& r, size_t d, int32_t block_size) {
    return blocks_for(int64_t(r.segments[d].size()), block_size);
}

// Block-attn's private re-rotated copy of segment d: as many blocks again.
inline int32_t private_copy(const RagRequest& r, size_t d, int32_t block_size) { return segment(r, d, block_size); }

// Segment d's recomputed rows (DocumentReuse::recompute): the most a selection may choose.
inline int32_t recompute(const RagRequest& r, size_t d, int32_t block_size) {
    return blocks_for(r.recompute_room(d, block_size), block_size);
}

// The prefix a neighbour-conditioned segment d is encoded after: at most
// max_conditioning_tokens (the worst case), or the tokens its neighbours have (admission).
inline int32_t conditioning(int64_t prefix_tokens, int32_t block_size) { return blocks_for(prefix_tokens, block_size); }

// A tail of `tokens` tokens (the prompt tail, grown by generated tokens).
inline int32_t tail(int64_t tokens, int32_t block_size) { return blocks_for(tokens, block_size); }

// The most blocks r may hold alone in `mode`, in a context of context_length tokens: every
// segment computed (twice for block-attn's copies) with its recomputed rows and conditioning
// prefix, and the tail grown to its last generated token.
inline int64_t worst_case(const RagRequest& r, CacheMode mode, int32_t block_size, int32_t context_length) {
    int64_t blocks = 0, total = int64_t(r.tail.size());
    for (size_t d = 0; d < r.segments.size(); ++d) {
        if (segments_are_blocks(mode)) {
            blocks += segment(r, d, block_size);
            if (mode == CacheMode::kBlockAttn) blocks += private_copy(r, d, block_size);
            blocks += recompute(r, d, block_size);
            blocks += conditioning(r.max_conditioning_tokens(d), block_size);
        }
        total += int64_t(r.segments[d].size());
    }
    const int64_t tail_tokens = segments_are_blocks(mode) ? int64_t(r.tail.size()) : total;
    return blocks + tail(std::min(tail_tokens + r.max_tokens, int64_t(context_length)), block_size);
}

}  // namespace lazyattn::engine::block_budget
