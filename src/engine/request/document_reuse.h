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
//   recompute_tokens  each document's first N tokens (rounded up to whole KV blocks, at most the
//                document) are recomputed in the request's private blocks with everything before
//                them in view (preamble, earlier documents), in the manner of CacheBlend; the
//                question reads those rows instead of the cached ones, and the rest of the
//                document from the cache. The cached copy is never changed.
//
// They apply to the segment cache modes (lazy, lazy-k, block-attn); prefix and none compute
// full attention and ignore them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "kernels/params/kv_dtype.h"
#include "engine/request/cache_mode.h"

namespace lazyattn::engine {

struct DocumentReuse {
    bool anchored = false;
    float logit_scale = 1.0f;
    float logit_bias = 0.0f;
    int32_t recompute_tokens = 0;

    static constexpr int32_t kMaxRecomputeTokens = 4096;

    bool rescaled() const { return logit_scale != 1.0f || logit_bias != 0.0f; }
    bool is_plain() const { return !anchored && !rescaled() && recompute_tokens == 0; }
    // kInvalidArgument unless logit_scale is in [0.25, 4], logit_bias in [-8, 8] (finite) and
    // recompute_tokens in [0, kMaxRecomputeTokens]. (A budget longer than a document recomputes
    // the whole document: clamped per document, see RagRequest::recompute_tokens.)
    Status validate() const;
    // "plain", or the parts joined by '+': "anchor+scale=0.9+bias=-0.5+recompute=16"
    // (parse_document_reuse's syntax).
    std::string name() const;
    bool operator==(const DocumentReuse&) const = default;
};

// "plain", or '+'-joined parts: "anchor", "scale=X", "bias=X", "recompute=N". kInvalidArgument
// naming the part.
Expected<DocumentReuse> parse_document_reuse(std::string_view spec);

// A cache mode with its reuse settings and, optionally, its own KV types, as the benchmarks
// name them: "MODE[:REUSE][@KV]", e.g. "lazy:anchor+recompute=16", "lazy@q8_0" (keys and values
// q8_0), "lazy@q8_0,f16" (keys q8_0, values f16). Without @KV the command's --kv-dtype holds.
struct ReuseVariant {
    std::string name;  // the spec as given
    CacheMode mode;
    DocumentReuse reuse;
    std::optional<kernels::KvTypes> kv_types;
};
Expected<ReuseVariant> parse_reuse_variant(std::string_view spec);

}  // namespace lazyattn::engine
