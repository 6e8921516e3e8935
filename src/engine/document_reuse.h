// How a request's tail reads its cached documents, beyond the plain block-diagonal layout. A
// model trained on full attention answers worse when every document is encoded alone: each
// document's first token becomes an attention sink of its own, and the question's attention
// spreads over k sinks. These settings recover quality without giving up one position-
// independent KV copy per document (docs/design.md, "Quality under reuse"):
//
//   anchored     every document is encoded after the request's preamble (segment 0: BOS, system
//                prompt, the user turn's opening), which becomes the one shared sink. The
//                document's KV is still one copy, keyed by (preamble, document), reusable at
//                any slot: its keys are stored at positions P.. (P = preamble length) and the
//                span rule places them anywhere.
//   logit_scale  the tail's attention logits over document spans are multiplied by this (an
//   logit_bias   inverse temperature) and shifted by this (the log of a weight on document
//                tokens relative to the preamble and the tail); AttentionSpan carries both.
//
// They apply to the segment cache modes (lazy, lazy-k, block-attn); prefix and none compute
// full attention and ignore them.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace lazyattn::engine {

struct DocumentReuse {
    bool anchored = false;
    float logit_scale = 1.0f;
    float logit_bias = 0.0f;

    bool rescaled() const { return logit_scale != 1.0f || logit_bias != 0.0f; }
    bool is_plain() const { return !anchored && !rescaled(); }
    // kInvalidArgument unless logit_scale is in [0.25, 4] and logit_bias in [-8, 8] (finite).
    Status validate() const;
    // "plain", or the parts joined by '+': "anchor+scale=0.9+bias=-0.5" (parse_document_reuse's
    // syntax).
    std::string name() const;
    bool operator==(const DocumentReuse&) const = default;
};

// "plain", or '+'-joined parts: "anchor", "scale=X", "bias=X". kInvalidArgument naming the part.
Expected<DocumentReuse> parse_document_reuse(std::string_view spec);

}  // namespace lazyattn::engine
