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
//   recompute_share   document), or a share of its tokens, are recomputed in the request's
//                private blocks with everything before them in view (preamble, earlier
//                documents), in the manner of EPIC and CacheBlend; the question reads those rows
//                instead of the cached ones, and the rest of the document from the cache. The
//                cached copy is never changed.
//   neighbours   every document reads its neighbour-conditioned copy (FusionRAG's offline step):
//                encoded once after the concatenation of the K documents most similar to it
//                (BM25 over token ids, engine/reuse/neighbour_index.h) among those its tenant
//                has indexed (`precompute --neighbours K`, or requests with this setting), so it
//                has seen related context, yet its keys are stored from position 0: still one
//                copy per document, reusable at any slot, keyed apart from the plain copy.
//   neighbours_when_ready  ("neighbours=K@ready", the `balanced` preset) each document is read
//                as its conditioned copy where one exists (RAM or store), else as its plain
//                copy: the request never computes nor waits for a conditioned copy; the engine
//                makes it in the background once the document recurs (EngineConfig::
//                condition_after, scheduler/background_conditioning.h).
//   damp_tokens  each document's first N tokens (rounded up to whole KV blocks, at most the
//   damp_bias    document) get this logit bias (<= 0) in every row of the request that reads
//                them, unless the document sits at the request's position 0 (that one is the
//                real sink). Encoded alone, a document's first tokens are sinks of their own
//                (see above); damping them moves the question's attention back to the content.
//                Their span is split off the document's (AttentionSpan::logit_bias): no kernel
//                changes, no extra work. Keys a request recomputed are not damped (they saw
//                their context, and are no sinks), so damping composes with recompute=N (the
//                first tokens) but not with private rows (a share or a selection).
//   recompute_select  which tokens: the first ones (a prefix of whole blocks: the span is split
//                in two), or a sparse set (random: a control at equal cost) that the kernels
//                read as private rows overriding the shared ones (kernels::KeyOverride), rows
//                stored in the document's own rotation frame.
//
// They apply to the segment cache modes (lazy, lazy-k, block-attn); prefix and none compute
// full attention and ignore them.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/request/cache_mode.h"
#include "kernels/params/kv_dtype.h"

namespace lazyattn::engine {

// Which document tokens a recompute budget goes to.
enum class RecomputeSelect {
    // The first tokens of each document (EPIC-style): "recompute=N" rounds N up to whole blocks,
    // read as a span of their own; "recompute=P%" takes exactly ceil(P n), as private rows.
    kFirst,
    kRandom,  // a uniform sample of each document's tokens, fixed by its tokens ("@random")
    // By the question (FusionRAG-style): the tail is first run against the cached documents and
    // each document token scored by the attention the tail's rows give it (softmax weights summed
    // over the rows and all heads of every layer); the top tokens are recomputed, then the tail.
    kQuery,     // the top tokens of each document, its own budget ("@query")
    kQueryAll,  // the top tokens of all documents together, the same total ("@query-all")
    // Half of each document's budget to its first tokens (where a model that never saw a
    // document alone loses most: a second attention sink), the other half to the heaviest of
    // the rest by the question's attention ("@first-query").
    kFirstQuery,
    // CacheBlend's (EuroSys 2025): every document token is run through the first layer with
    // everything before it in view, and the tokens whose layer-1 keys and values moved furthest
    // from the cached ones (Model::measure_kv_deviation) are recomputed ("@deviation").
    kDeviation,
};

// Whether the rows are chosen by a probe of the tail's attention (known only after it ran).
inline bool selects_by_query(RecomputeSelect s) {
    return s == RecomputeSelect::kQuery || s == RecomputeSelect::kQueryAll || s == RecomputeSelect::kFirstQuery;
}
// Whether the rows are chosen by a measurement made in the request (the tail's attention, or
// the documents' KV deviation): known only after it ran, ranked by select_by_mass.
inline bool selected_by_measure(RecomputeSelect s) { return selects_by_query(s) || s == RecomputeSelect::kDeviation; }

// A setting of DocumentReuse, as DocumentReuse::check names the one it refuses: a caller that
// reads the settings from its own fields (the server's JSON body) names its field for it.
enum class ReuseSetting {
    kLogitScale,
    kLogitBias,
    kRecomputeTokens,
    kRecomputeShare,
    kRecomputeSelect,
    kNeighbours,
    kDampTokens,
    kDampBias,
    kCombination,  // two settings that exclude each other
};
struct ReuseSettingError {
    ReuseSetting setting;
    std::string message;
};

struct DocumentReuse {
    bool anchored = false;
    float logit_scale = 1.0f;
    float logit_bias = 0.0f;
    int32_t recompute_tokens = 0;
    // Of each document's tokens, [kMinRecomputeShare, 1], or 0 (none); exclusive with the count. A
    // double, as JSON numbers are: a caller's 1e-300 stays refused rather than rounding to none.
    double recompute_share = 0.0;
    RecomputeSelect recompute_select = RecomputeSelect::kFirst;
    int32_t neighbours = 0;  // K: documents read their copy conditioned on K neighbours; 0: off
    // With neighbours: only a conditioned copy that exists already is read, else the plain one.
    bool neighbours_when_ready = false;

    // Damped sinks: each non-first document's first damp_tokens get damp_bias; 0 tokens: off.
    int32_t damp_tokens = 0;
    float damp_bias = 0.0f;

    static constexpr int32_t kMaxRecomputeTokens = 4096;
    static constexpr int32_t kMaxDampTokens = 4096;
    // The most negative damping: exp(-32) ~ 1e-14, the keys masked to float precision.
    static constexpr float kMinDampBias = -32.0f;
    // The smallest share asked for (0.01%): a smaller one is refused rather than rounded to no
    // recompute at all (a float holds nothing below ~1e-38, and such a share is surely a mistake).
    static constexpr double kMinRecomputeShare = 1e-4;
    static constexpr int32_t kMaxNeighbours = 8;
    static constexpr int32_t kMaxNeighbourTokens = 1024;

    bool rescaled() const { return logit_scale != 1.0f || logit_bias != 0.0f; }
    bool recomputes() const { return recompute_tokens > 0 || recompute_share > 0.0; }
    bool damps() const { return damp_tokens > 0; }
    bool is_plain() const { return !anchored && !rescaled() && !recomputes() && neighbours == 0 && !damps(); }
    // The one place the ranges are checked (parsers check syntax and types only): logit_scale in
    // [0.25, 4], logit_bias in [-8, 8], recompute_tokens in [0, kMaxRecomputeTokens],
    // recompute_share 0 or in [kMinRecomputeShare, 1] and not both set (0 in either means none), a
    // selection other than the first tokens has a budget, neighbours in [0, kMaxNeighbours] and not
    // combined with anchored, damp_tokens in [0, kMaxDampTokens] and damp_bias in [kMinDampBias, 0]
    // (a bias needs tokens; damping not with private recomputed rows). (A budget longer than a document recomputes the whole document:
    // clamped per document, see RagRequest::recompute_rows.) The first setting refused, or none.
    std::optional<ReuseSettingError> check() const;
    // check() as kInvalidArgument.
    Status validate() const;
    // The most tokens a document of n tokens is encoded after when conditioned: each neighbour
    // contributes at most n tokens, all together at most kMaxNeighbourTokens (what the KV budget
    // reserves, so a request's worst case is known before its neighbours are); 0 when off.
    int32_t max_conditioning_tokens(int64_t n) const {
        return int32_t(std::min<int64_t>(kMaxNeighbourTokens, int64_t(neighbours) * n));
    }
    // Tokens recomputed of a document of n tokens: the count or ceil(share * n), at most n.
    int32_t recompute_count(int32_t n) const;
    // The first tokens of a document of n tokens that damping covers: damp_tokens rounded up to
    // whole blocks (their span starts and ends on a block edge), at most n; 0 when off.
    int32_t damp_count(int32_t n, int32_t block_size) const;
    // "plain", or the parts joined by '+': "anchor+scale=0.9+bias=-0.5+recompute=16",
    // "recompute=15%@random", "recompute=16+damp=16:-2" (parse_document_reuse's syntax).
    std::string name() const;
    bool operator==(const DocumentReuse&) const = default;
};

// The tokens of a document (`tokens`) that `reuse` recomputes, ascending: the first
// recompute_count for kFirst (a count rounded up to whole blocks, at most the document); for kRandom a
// uniform sample of recompute_count tokens drawn by a generator seeded with the document's
// tokens, so a document gets the same sample in every request. Empty when reuse recomputes none.
std::vector<int32_t> recompute_rows(const DocumentReuse& reuse, const std::vector<int32_t>& tokens, int32_t block_size);
// Whether the recomputed rows are read as a span of their own (the first N tokens, rounded up
// to whole blocks: "recompute=N"), rather than as private rows overriding the shared ones (a
// share, "recompute=P%", is exactly ceil(P n) tokens whichever are chosen, so that selections
// compare at equal cost).
inline bool reuse_splits_spans(const DocumentReuse& r) {
    return r.recompute_select == RecomputeSelect::kFirst && r.recompute_share <= 0.0;
}

// Its size, without drawing the sample.
int32_t recompute_row_count(const DocumentReuse& reuse, int32_t num_tokens, int32_t block_size);

// Selection by a measurement: rows[d] (ascending) of each document d from the score of its
// tokens (mass[d][t]: the question's attention mass, or the KV deviation), the `count[d]`
// heaviest of each (kQuery, kDeviation), or the sum of the counts heaviest over all documents
// together (kQueryAll), or the first count[d] / 2 (rounded up) and the heaviest of the rest
// (kFirstQuery); ties go to the earlier token.
std::vector<std::vector<int32_t>> select_by_mass(RecomputeSelect select, const std::vector<std::vector<float>>& mass,
                                                 const std::vector<int32_t>& count);

// "first" / "random" / "query" / "query-all" / "deviation", and back; all of them as a list for
// messages ("first, random, ...", each name between `quote`s).
std::string_view select_name(RecomputeSelect s);
std::optional<RecomputeSelect> parse_select(std::string_view name);
std::string select_names(std::string_view quote = "");

// A double setting as the float DocumentReuse keeps, saturated at the float range so that an
// out-of-range value stays out of range (and validate() refuses it) instead of overflowing.
inline float narrow_to_float(double x) {
    constexpr double kFloatMax = 3.4028234663852886e38;
    return float(std::clamp(x, -kFloatMax, kFloatMax));
}

// "plain", or '+'-joined parts: "anchor", "neighbours=K[@ready]", "scale=X", "bias=X", "recompute=N" or "recompute=P%",
// optionally followed by "@first" (the default) or "@random", "damp=N:B" (damp_tokens N, damp_bias B).
// kInvalidArgument naming the part.
Expected<DocumentReuse> parse_document_reuse(std::string_view spec);

// A cache mode with its reuse settings and, optionally, its own KV types, as the benchmarks
// name them: "MODE[:REUSE][@KV]" (REUSE may be "default": see model_default), e.g. "lazy:anchor+recompute=16", "lazy@q8_0" (keys and values
// q8_0), "lazy@q8_0,f16" (keys q8_0, values f16), "lazy:recompute=15%@random@q8_0". The last '@'
// names KV types when what follows it is KV types; otherwise it belongs to the reuse setting.
// Without @KV the command's --kv-dtype holds.
struct ReuseVariant {
    std::string name;  // the spec as given
    CacheMode mode;
    DocumentReuse reuse;
    std::optional<kernels::KvTypes> kv_types;
    // "MODE:default": whatever `serve` does by default with this model (the default preset's
    // reuse, or its GGUF's block fine-tuning layout: model_serving_default); the command fills
    // `reuse` in once the model is loaded.
    bool model_default = false;
};
Expected<ReuseVariant> parse_reuse_variant(std::string_view spec);

}  // namespace lazyattn::engine
