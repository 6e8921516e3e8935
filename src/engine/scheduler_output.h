// SchedulerOutput: what one step runs, as the Scheduler decided it (vLLM v1's SchedulerOutput):
// which work, how much of it, never how its rows are laid out. The ModelRunner lays the rows
// out (runner/input_builder.h), runs them and returns a ModelRunnerOutput with one result per
// chunk; Scheduler::update() applies the two.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/request/token_logprobs.h"
#include "engine/reuse/phase_kinds.h"
#include "engine/sequence/prefill_phase.h"
#include "model/kv_block_copy.h"

namespace lazyattn::engine {

struct SequenceState;
struct SegmentJob;

// Tokens [begin, end) of a shared segment job computed this step.
struct JobChunk {
    int64_t job_id = -1;
    const SegmentJob* job = nullptr;
    int32_t begin = 0, end = 0;
};

// Rows [begin, end) of one phase of a request (PrefillPhase) computed this step; a decode row is
// a one-row chunk of the tail phase past the prompt.
struct PhaseChunk {
    SequenceState* seq = nullptr;
    PhaseKind kind = PhaseKind::kTail;
    int32_t begin = 0, end = 0;
    // kTail only. all_logits: every row returns logits (else only the last).
    bool all_logits = false;
    // The runner samples the next token from the last row (the prompt is done after this chunk
    // and the request may still generate).
    bool sample = false;
    // Prompt logprobs: row j of the tail predicts request.tail[j + 1 - prompt_offset]; negative
    // top count (-1) when the request asked for none.
    int32_t prompt_logprobs = -1;
    int32_t prompt_offset = 0;

    int32_t rows() const { return end - begin; }
};

struct SchedulerOutput {
    std::vector<JobChunk> jobs;
    // Decode rows first (one per running request), then prefill chunks in the order the budget
    // was handed out.
    std::vector<PhaseChunk> chunks;
    // Block-attn's copies made this step: they run in its forward, before any row is stored.
    std::vector<model::KvBlockCopy> kv_copies;
    int32_t num_decode_rows = 0;      // of the chunks' rows, one-token decode rows of running requests
    int32_t num_background_rows = 0;  // of the jobs' rows, background work's (Scheduler::plan_background)
    // Whether admission, cancellation or preemption changed anything while scheduling.
    bool progressed = false;

    // Nothing for the runner (no rows, no copies, nothing measured).
    bool empty() const { return jobs.empty() && chunks.empty() && kv_copies.empty(); }
    // Rows the step's forward computes (a kind's rows run apart, as KV deviation's, are not counted).
    int32_t num_rows() const {
        int32_t n = 0;
        for (const JobChunk& j : jobs) n += j.end - j.begin;
        for (const PhaseChunk& c : chunks) n += phase_kind(c.kind).apart ? 0 : c.rows();
        return n;
    }
};

// What the runner computed for one PhaseChunk.
struct ChunkResult {
    // kTail: the sampled token (PhaseChunk::sample), else -1.
    int32_t token = -1;
    bool has_logprobs = false;
    TokenLogprobs logprobs;  // of `token`, when the request asked for logprobs
    // kTail: raw logits of every row when PhaseChunk::all_logits ([rows, vocab]), else of the
    // last row only; valid until the runner's next step.
    const float* logits = nullptr;
    int32_t num_logit_rows = 0;
    // kTail: prompt logprobs of the tail tokens this chunk's rows predict: (index into
    // request.tail, logprobs).
    std::vector<std::pair<int32_t, TokenLogprobs>> prompt_logprobs;
    // A measurement's chunk: what its rows measured, as its kind's layout placed it (the probe:
    // the attention mass its measured rows gave each key of the request's layout, its segments'
    // tokens in order, then its tail's; KV deviation: one per row), empty when none was measured.
    std::vector<float> measured;
};

// A generated token for the OutputProcessor (Scheduler::update gives them to EngineCore::step):
// token -1 when the request reached max_tokens with nothing more to sample (it ends "length").
struct StepToken {
    SequenceState* seq = nullptr;
    int32_t token = -1;
    TokenLogprobs* logprobs = nullptr;  // into the step's ModelRunnerOutput; null when none asked
};

struct ModelRunnerOutput {
    std::vector<ChunkResult> chunks;  // one per SchedulerOutput::chunks, same order
    double forward_ms = 0;
};

}  // namespace lazyattn::engine
