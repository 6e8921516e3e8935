// A request as lazyattn sees it: segments (documents, optionally a system preamble first), each
// tokenized alone, followed by a tail (the question; generated tokens extend it).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request/conditioning_key.h"
#include "engine/request/document_reuse.h"
#include "engine/request/finish_reason.h"
#include "engine/request/sampling_params.h"
#include "engine/request/token_logprobs.h"

namespace lazyattn::engine {

using StopStrings = std::shared_ptr<const std::vector<std::string>>;
inline StopStrings make_stop_strings(std::vector<std::string> stops) {
    if (stops.empty()) return nullptr;
    return std::make_shared<const std::vector<std::string>>(std::move(stops));
}

struct RagRequest {
    // Whose cache the request reads and fills: documents, pins and cached prompts are shared
    // only within a tenant ("" = the default tenant).
    std::string tenant;
    std::vector<std::vector<int32_t>> segments;
    // Segment 0 is template text (system prompt, earlier turns): cached like any segment but
    // never listed as a document.
    bool first_segment_is_preamble = false;
    std::vector<int32_t> tail;  // must not be empty: its last token yields the first logits
    SamplingParams sampling;
    int32_t max_tokens = 128;
    // Stop strings, shared read-only by every choice of a request (never copied per choice).
    StopStrings stop;
    // Control tokens whose text the output shows (sorted ids; null: none): a tool family's markers
    // ([TOOL_CALLS], <|python_tag|>) when the request's tools are parsed, so the parser sees them.
    // Every other control token decodes to nothing.
    std::shared_ptr<const std::vector<int32_t>> shown_control_tokens;
    bool ignore_eos = false;
    // The handle gets kProgress events while the prompt runs (llama-server's return_progress):
    // one at admission, one per step that put more of the prompt in place, the last when all of
    // it is (output/prefill_progress.h).
    bool report_progress = false;
    // max_tokens is the server's default, not the client's: where the whole default cannot fit
    // the KV pool it is lowered to what fits instead of refusing the request.
    bool max_tokens_is_default = false;
    // -1: none; k in [0, 20]: the logprob of every tail prompt token given what precedes it, plus
    // its k most likely alternatives (RagResult::prompt_*; OpenAI's echo + logprobs, what
    // lm-evaluation-harness's loglikelihood reads). Every tail row is then computed (cached tail
    // blocks are not reused); the logits stay on the engine thread. The logprobs are of the raw
    // model (no penalties, no temperature). In the prefix and none modes the segments are part of
    // the causal prompt, so the first tail token gets the logprob given the last segment token;
    // in the segment modes (lazy, lazy-k, block-attn), and when the request has no segments, the
    // first tail token has nothing computed before it: NaN.
    int32_t prompt_logprobs = -1;
    // How the tail reads the documents (anchored encoding, rescaling); segment modes only.
    DocumentReuse reuse;
    // The choices of one request (OpenAI's `n`) carry the same non-zero group: identical prompts
    // sampled n times. Their recomputed document rows (reuse.recompute) are the same, so the first
    // choice admitted computes them and the others read its rows (KvManager's patch shares).
    uint64_t choice_group = 0;

    // Segment d is a document encoded after the preamble (reuse.anchored): the preamble's length,
    // which is where the document's keys start; 0 for a document encoded alone, and for the
    // preamble itself.
    int32_t anchor_tokens(size_t d) const {
        if (!reuse.anchored || !first_segment_is_preamble || d == 0 || segments.empty()) return 0;
        return int32_t(segments[0].size());
    }

    // Segment d is a document: a segment of the request that is not the preamble.
    bool is_document(size_t d) const { return d < segments.size() && !(d == 0 && first_segment_is_preamble); }

    // reuse.neighbours_when_ready: per segment, whether its conditioned copy was found (RAM or
    // store) when the request was first admitted, so it reads that copy (else the plain one). Set
    // by the KV manager at admission, never by a caller.
    std::vector<uint8_t> conditioned_ready;
    // reuse.neighbours: per segment, the copy it reads (conditioning_key.h: the neighbours the
    // tenant's index gave at admission). Set by the KV manager at admission, never by a caller.
    std::vector<ConditioningKey> conditioned_on;
    // neighbours_when_ready: conditioned_ready and conditioned_on were decided at the first
    // admission of this request or of a sibling choice (choice_group) and hold for every later
    // admission (a sibling's, a re-admission after preemption): one request's choices read one
    // decision, whatever copies are published meanwhile. Set by the scheduler, never by a caller.
    bool conditioning_pinned = false;

    // Segment d is a document read as its neighbour-conditioned copy (reuse.neighbours): how many
    // neighbours; 0 for the preamble, when the request does not condition, and for a document
    // read plain because its conditioned copy is not made yet (neighbours_when_ready).
    int32_t conditioning_neighbours(size_t d) const {
        if (reuse.neighbours <= 0 || !is_document(d)) return 0;
        if (reuse.neighbours_when_ready && !(d < conditioned_ready.size() && conditioned_ready[d] != 0)) return 0;
        return reuse.neighbours;
    }
    // The key of the conditioned copy segment d reads; none (the plain copy) where it reads none.
    ConditioningKey conditioning_key(size_t d) const {
        return conditioning_neighbours(d) > 0 && d < conditioned_on.size() ? conditioned_on[d] : ConditioningKey{};
    }
    // The most tokens segment d is conditioned on (DocumentReuse::max_conditioning_tokens); 0
    // when its copy is only read where it exists (a request never encodes it then).
    int32_t max_conditioning_tokens(size_t d) const {
        if (reuse.neighbours_when_ready) return 0;
        return conditioning_neighbours(d) > 0 ? reuse.max_conditioning_tokens(int64_t(segments[d].size())) : 0;
    }

    // Tokens of segment d recomputed privately, ascending (recompute_rows in document_reuse.h);
    // none for the preamble.
    std::vector<int32_t> recompute_rows(size_t d, int32_t block_size) const {
        if (!reuse.recomputes() || !is_document(d)) return {};
        return engine::recompute_rows(reuse, segments[d], block_size);
    }
    // The most rows of segment d a request may recompute: what its KV budget reserves (a
    // measured selection chooses within it). Selected over all documents together (@query-all),
    // one document may take the whole request's budget: up to that, or all of it.
    int32_t recompute_room(size_t d, int32_t block_size) const {
        if (reuse.recompute_select != RecomputeSelect::kQueryAll) return recompute_budget(d, block_size);
        if (!reuse.recomputes() || !is_document(d)) return 0;
        int64_t total = 0;
        for (size_t e = 0; e < segments.size(); ++e) total += recompute_budget(e, block_size);
        return int32_t(std::min<int64_t>(total, int64_t(segments[d].size())));
    }
    // The budget of document d alone (its share or count): what @query-all sums.
    int32_t recompute_budget(size_t d, int32_t block_size) const {
        if (!reuse.recomputes() || !is_document(d)) return 0;
        return engine::recompute_row_count(reuse, int32_t(segments[d].size()), block_size);
    }

    // The document segments: every segment but the preamble.
    std::span<const std::vector<int32_t>> documents() const {
        return std::span(segments).subspan(first_segment_is_preamble && !segments.empty() ? 1 : 0);
    }
    // Prompt tokens in document segments (the preamble is not a document).
    int32_t num_document_tokens() const {
        int64_t n = 0;
        for (const auto& d : documents()) n += int64_t(d.size());
        return int32_t(std::min<int64_t>(n, INT32_MAX));
    }

    int32_t num_prompt_tokens() const {
        int64_t n = int64_t(tail.size());
        for (const auto& s : segments) n += int64_t(s.size());
        return int32_t(std::min<int64_t>(n, INT32_MAX));
    }
};

struct RequestStats {
    int32_t num_prompt_tokens = 0;
    int32_t document_tokens = 0;    // of those, in document segments (RagRequest::num_document_tokens)
    int32_t prefill_tokens = 0;     // prompt tokens computed for this request (segment jobs included)
    int32_t recomputed_tokens = 0;  // of those, document tokens recomputed privately (DocumentReuse)
    int32_t deviation_rows = 0;     // document tokens measured for @deviation (two layers, not counted above)
    int32_t reused_tokens = 0;      // prompt tokens served from cache
    int32_t segments_hit = 0;
    int32_t segments_missed = 0;
    int32_t segments_from_store = 0;  // of the hits, loaded from a --kv-store tier, not the RAM pool
    // neighbours=K@ready: documents looked up, and of those read as their conditioned copy.
    int32_t conditioned_lookups = 0;
    int32_t segments_conditioned = 0;
    int32_t num_generated = 0;
    int32_t peak_blocks = 0;  // blocks in use by the whole pool at this request's peak
    int32_t preemptions = 0;  // times this request was preempted and recomputed
    double queue_ms = 0;      // submission to admission
    double ttft_ms = 0;       // submission to the first generated token
    double decode_ms = 0;
    double decode_tok_per_s = 0;
};

struct RagResult {
    std::vector<int32_t> token_ids;  // generated tokens (an end-of-generation token included)
    std::string text;                // generated text, up to a stop string
    FinishReason finish_reason = FinishReason::kNone;
    Status status;          // why, when finish_reason is kError
    std::string stop_word;  // the stop string that ended it (kStop by a stop string; "" for end of generation)
    RequestStats stats;
    // When request.sampling.logprobs >= 0: per generated token (token_ids[i]), its logprob and
    // the top alternatives (see Sampler for the distribution). Empty otherwise.
    std::vector<float> token_logprobs;
    std::vector<TopLogprobs> top_logprobs;
    // When request.prompt_logprobs >= 0: per tail prompt token (request.tail[i]), log P(token |
    // what precedes it) and the top alternatives at that position (NaN and empty where nothing
    // precedes it; see RagRequest::prompt_logprobs). Empty otherwise.
    std::vector<float> prompt_token_logprobs;
    std::vector<TopLogprobs> prompt_top_logprobs;
};

}  // namespace lazyattn::engine
