// SchedulerOutput: what one step runs, as the Scheduler decided it (vLLM v1's SchedulerOutput).
// The ModelRunner executes it and returns a ModelRunnerOutput; Scheduler::update() applies the
// two. Rows are laid out in the batch in this order: segment jobs, recomputed document tokens
// (patches), then prompt tails and decode rows; logits come back in the order of `tails`.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/request/token_logprobs.h"
#include "model/forward_batch.h"

namespace lazyattn::engine {

struct SequenceState;

// A chunk of a request's tail (prompt rows or one decode row) computed this step.
struct TailChunk {
    SequenceState* seq = nullptr;
    int32_t begin = 0, end = 0;  // tail tokens computed this step
    bool all_logits = false;     // every row returns logits (else only the last)
    // The runner samples the next token from the last row (the prompt is done after this chunk
    // and the request may still generate).
    bool sample = false;
    // Prompt logprobs: row j of the tail predicts request.tail[j + 1 - prompt_offset]; negative
    // top count (-1) when the request asked for none.
    int32_t prompt_logprobs = -1;
    int32_t prompt_offset = 0;
};

// A chunk of a shared segment job.
struct JobChunk {
    int64_t job_id = -1;
    int32_t n = 0;  // tokens computed this step
};

// A chunk of a request's recomputed document tokens (no logits).
struct PatchChunk {
    SequenceState* seq = nullptr;
    int32_t n = 0;
};

// A chunk of the probe of a request that selects its recomputed rows by the question: prompt
// tail rows run against the cached documents, no logits; the attention mass they give each key
// comes back in ModelRunnerOutput::key_mass from mass_offset on (the request's segments in
// order, then its tail span: Model::forward's layout).
struct ProbeChunk {
    SequenceState* seq = nullptr;
    int32_t n = 0;
    int64_t mass_offset = 0;
};

// A chunk of the KV-deviation measurement of a request that selects its recomputed rows by it
// (@deviation): document tokens [begin, end) of those with a budget, in segment order, as rows
// of SchedulerOutput::measure from `row` on; their deviations come back in
// ModelRunnerOutput::kv_deviation at the same rows.
struct DeviationChunk {
    SequenceState* seq = nullptr;
    int32_t begin = 0, end = 0;
    int32_t row = 0;
};

struct SchedulerOutput {
    model::ForwardBatch batch;  // the rows, spans and block-attn copies
    // Rows measured rather than computed (Model::measure_kv_deviation), after `batch` ran: they
    // read only cached documents and store nothing.
    model::ForwardBatch measure;
    std::vector<DeviationChunk> deviations;
    std::vector<JobChunk> jobs;
    std::vector<PatchChunk> patches;
    std::vector<ProbeChunk> probes;
    std::vector<TailChunk> tails;
    int32_t num_decode_rows = 0;  // of the rows, one-token decode rows of running requests
    // Whether admission, cancellation or preemption changed anything while scheduling.
    bool progressed = false;

    // Nothing for the runner (no rows, no copies, nothing measured).
    bool empty() const { return batch.num_rows() == 0 && batch.kv_copies.empty() && measure.num_rows() == 0; }
};

// What the runner computed for one TailChunk.
struct TailResult {
    int32_t token = -1;  // the sampled token (TailChunk::sample), else -1
    bool has_logprobs = false;
    TokenLogprobs logprobs;  // of `token`, when the request asked for logprobs
    // Raw logits of every row when TailChunk::all_logits ([rows, vocab]), else of the last row
    // only; valid until the runner's next step.
    const float* logits = nullptr;
    int32_t num_logit_rows = 0;
    // Prompt logprobs of the tail tokens this chunk's rows predict: (index into request.tail, logprobs).
    std::vector<std::pair<int32_t, TokenLogprobs>> prompt_logprobs;
};

struct ModelRunnerOutput {
    std::vector<TailResult> tails;    // one per SchedulerOutput::tails, same order
    std::vector<float> key_mass;      // of the probes (batch.mass_seqs), when the step has any
    std::vector<float> kv_deviation;  // one per row of SchedulerOutput::measure
    double forward_ms = 0;
};

}  // namespace lazyattn::engine
