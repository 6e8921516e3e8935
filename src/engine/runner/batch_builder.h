// The row-level rules of a ForwardBatch, written once: where a token's K/V goes (its slot), how
// a span reads blocks, and the two sequences every layout is made of (InputBuilder uses them;
// model tests build batches with them directly).
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_shape.h"
#include "model/forward_batch.h"

namespace lazyattn::engine {

// The slot of token t of a block table (kv_shape.h).
using kv::slot_of;

// Appends a span reading `n` tokens from blocks[first_block...] (the blocks they need) at logical
// positions [logical, logical + n), keys rotated from `stored`; no-op when n <= 0. Returns the
// span's index, or -1.
int32_t add_span(model::ForwardBatch& batch, const std::vector<int32_t>& blocks, int32_t first_block, int32_t n,
                 int32_t logical, int32_t stored, int32_t block_size);

// Adds a sequence attending causally to itself (one span from position 0, keys rotated at their
// own positions): `new_tokens` are computed this step at positions [start, start + n), its
// K/V go to `block_table`, which must cover start + n tokens.
// logits: 0 = none, 1 = last row only, 2 = every new row.
void add_plain_sequence(model::ForwardBatch& batch, const std::vector<int32_t>& new_tokens, int32_t start,
                        const std::vector<int32_t>& block_table, int32_t block_size, int logits);

// A cached prefix a sequence reads before its own tokens: `num_tokens` tokens in `blocks`, at
// positions [0, num_tokens), keys stored there.
struct PrefixSpan {
    const std::vector<int32_t>& blocks;
    int32_t num_tokens;
};

// An anchored document's chunk (DocumentReuse::anchored): like add_plain_sequence, with the
// sequence's tokens at positions P + [start, start + n) (P = anchor.num_tokens, keys stored
// there) attending to the anchor, then causally to themselves. block_table holds the sequence's
// own tokens from its index 0. No logits.
// keys_from_zero (a neighbour-conditioned document): the queries are still at P + [start, ...),
// but the keys are stored rotated at [start, ...), as a document encoded alone stores them, and
// read back with Δ = P (the span rule), so the copy is read at any slot like a plain one.
void add_anchored_sequence(model::ForwardBatch& batch, const std::vector<int32_t>& new_tokens, int32_t start,
                           const std::vector<int32_t>& block_table, const PrefixSpan& anchor, int32_t block_size,
                           bool keys_from_zero = false);

}  // namespace lazyattn::engine
